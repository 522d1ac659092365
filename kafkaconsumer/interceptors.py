"""Consumer interceptors: see (and possibly replace) records before ``poll()`` returns them.

``interceptor.classes`` takes :class:`ConsumerInterceptor` instances, classes (instantiated with
no arguments, then ``configure(configs)`` when they have it), or import paths
(``"package.module:Class"`` / ``"package.module.Class"``). :class:`ConsumerInterceptors` runs
them in order. As in Java, an exception raised by an interceptor is logged and swallowed: the
next interceptor gets the records the failing one was given, and the consumer goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.structs import ConsumerRecords, OffsetAndMetadata, TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["ConsumerInterceptor", "ConsumerInterceptors"]


class ConsumerInterceptor:
    """Base class of consumer interceptors (Java ``ConsumerInterceptor``).

    Every method has a do-nothing default, so a subclass overrides only what it needs. The
    methods run on the thread that calls ``poll()`` / commits, never under a client lock.
    """

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Called once with the consumer's configuration, before any other method."""

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        """Called with each poll's records just before ``poll()`` returns; return the records
        to hand on (the same object, or a new :class:`ConsumerRecords`)."""
        return records

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Called after offsets were committed successfully (sync, async or automatic)."""

    def close(self) -> None:
        """Called when the consumer closes."""


def _instantiate(spec: Any, configs: Mapping[str, Any] | None) -> Any:
    if isinstance(spec, str):
        from kafkaconsumer.utils.loader import resolve_object

        spec = resolve_object(spec, key="interceptor.classes")
    if isinstance(spec, type):
        try:
            spec = spec()
        except TypeError as exc:
            raise ConfigError(
                f"interceptor.classes: cannot instantiate {spec.__qualname__} without "
                f"arguments: {exc}"
            ) from None
        configure = getattr(spec, "configure", None)
        if configs is not None and callable(configure):
            configure(configs)
    if not any(callable(getattr(spec, m, None)) for m in ("on_consume", "on_commit")):
        raise ConfigError(f"interceptor.classes: {spec!r} has neither on_consume() nor on_commit()")
    return spec


class ConsumerInterceptors:
    """An ordered chain of interceptors (Java ``ConsumerInterceptors``).

    ``bool(chain)`` is False when there are none, so the consumer can skip the calls.

    Thread-safety: the chain itself is immutable; it calls interceptors on the caller's thread.
    """

    def __init__(
        self, interceptors: Iterable[Any] = (), *, configs: Mapping[str, Any] | None = None
    ) -> None:
        """Chain ``interceptors`` in order; a class entry is instantiated and given
        ``configure(configs)``.
        """
        self._interceptors = [_instantiate(i, configs) for i in interceptors]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ConsumerInterceptors:
        """Build from ``config["interceptor.classes"]``; class entries get ``configure(config)``."""
        return cls(config.get("interceptor.classes") or (), configs=config)

    @property
    def interceptors(self) -> list[Any]:
        """The interceptor objects, in order."""
        return list(self._interceptors)

    def __len__(self) -> int:
        return len(self._interceptors)

    def __bool__(self) -> bool:
        return bool(self._interceptors)

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        """Pass ``records`` through every interceptor's ``on_consume``."""
        for interceptor in self._interceptors:
            fn = getattr(interceptor, "on_consume", None)
            if fn is None:
                continue
            try:
                result = fn(records)
            except Exception:  # noqa: BLE001 - Java logs and ignores interceptor failures
                logger.warning("error in %r.on_consume; ignored", interceptor, exc_info=True)
                continue
            if result is None:
                logger.warning(
                    "%r.on_consume returned None; keeping the records it was given", interceptor
                )
                continue
            records = result
        return records

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Tell every interceptor about committed offsets."""
        for interceptor in self._interceptors:
            fn = getattr(interceptor, "on_commit", None)
            if fn is None:
                continue
            try:
                fn(offsets)
            except Exception:  # noqa: BLE001 - Java logs and ignores interceptor failures
                logger.warning("error in %r.on_commit; ignored", interceptor, exc_info=True)

    def close(self) -> None:
        """Close every interceptor (failures are logged)."""
        for interceptor in self._interceptors:
            fn = getattr(interceptor, "close", None)
            if fn is None:
                continue
            try:
                fn()
            except Exception:  # noqa: BLE001 - closing must reach every interceptor
                logger.warning("error closing %r; ignored", interceptor, exc_info=True)

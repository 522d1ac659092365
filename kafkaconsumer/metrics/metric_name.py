"""A metric's identity, ``(name, group, tags)`` (Java ``MetricName``)."""

from __future__ import annotations

from collections.abc import Mapping


class MetricName:
    """Identity of one metric: ``name``, ``group`` and ``tags`` (Java ``MetricName``).

    Equality and hashing use name, group and tags; the description is informative only.

    Thread-safety: immutable after construction; safe from any thread.
    """

    __slots__ = ("name", "group", "description", "_tags", "_key")

    def __init__(
        self, name: str, group: str, description: str = "", tags: Mapping[str, str] | None = None
    ) -> None:
        """Name a metric; ``tags`` is copied."""
        # Set once here and never changed.
        self.name = name
        self.group = group
        self.description = description
        self._tags = dict(tags or {})
        self._key = (name, group, tuple(sorted(self._tags.items())))

    @property
    def tags(self) -> Mapping[str, str]:
        """The tags, e.g. ``{"client-id": "consumer-g-1", "topic": "orders"}``."""
        return dict(self._tags)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MetricName) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"MetricName(name={self.name!r}, group={self.group!r}, tags={self._tags!r})"

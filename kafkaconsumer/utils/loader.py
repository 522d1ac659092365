"""Loading a user's plugin (deserializer, interceptor, assignor, reporter) by import path.

Java loads a configured class by name (``Utils.loadClass``); here a plugin is named by a
``"package.module:Name"`` or ``"package.module.Name"`` path. The configuration validates such
paths when a client is built, and the serializers, interceptors, metrics and the producer load
them; all of them import this module, which imports nothing of theirs.
"""

from __future__ import annotations

import importlib
from typing import Any

from kafkaconsumer.errors import ConfigError

__all__ = ["resolve_object"]


def resolve_object(spec: str, *, key: str = "") -> Any:
    """Import ``"package.module:Name"`` or ``"package.module.Name"`` and return the object.

    Raises :class:`ConfigError` naming ``key`` when the module or attribute does not exist.
    """
    where = f"{key}: " if key else ""
    if ":" in spec:
        module_name, _, attr_path = spec.partition(":")
    elif "." in spec:
        module_name, _, attr_path = spec.rpartition(".")
    else:
        raise ConfigError(f"{where}{spec!r} is not a 'module:Name' or 'module.Name' path")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{where}cannot import module {module_name!r} for {spec!r}: {exc}"
        ) from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(
                f"{where}module {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return obj

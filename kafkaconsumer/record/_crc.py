"""CRC-32C of record batches, from the ``crc32c`` package's compiled module.

``import crc32c`` runs the package's ``__init__``, which reads the package's own version through
``importlib.metadata`` (scanning the installed distributions) and imports its command line:
about 13 ms, a fifth of this package's import time, for a function that needs neither. So the
compiled module ``crc32c._crc32c`` is loaded by itself, and registered under its name so that a
later ``import crc32c`` uses the same module. Any surprise in the package's layout (another
module name in a future release) falls back to the plain import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, cast

__all__ = ["crc32c"]


def _load() -> Callable[..., int]:
    package = sys.modules.get("crc32c")
    if package is not None:
        return package.crc32c  # type: ignore[no-any-return]
    try:
        import importlib.machinery
        import importlib.util

        module: Any = sys.modules.get("crc32c._crc32c")
        if module is None:
            spec = importlib.util.find_spec("crc32c")
            locations = list(spec.submodule_search_locations or []) if spec else []
            ext_spec = None
            for location in locations:
                finder = importlib.machinery.FileFinder(
                    location,
                    (
                        importlib.machinery.ExtensionFileLoader,
                        importlib.machinery.EXTENSION_SUFFIXES,
                    ),
                )
                ext_spec = finder.find_spec("crc32c._crc32c")
                if ext_spec is not None:
                    break
            if ext_spec is None or ext_spec.loader is None:
                raise ImportError("crc32c._crc32c not found")
            module = importlib.util.module_from_spec(ext_spec)
            ext_spec.loader.exec_module(module)
            sys.modules["crc32c._crc32c"] = module
        function = module.crc32c
        if function(b"123456789") != 0xE3069283:  # the CRC-32C check value
            raise ImportError("crc32c._crc32c.crc32c is not CRC-32C")
        return function  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - any surprise: the package's own import path
        from crc32c import crc32c as fallback

        return cast(Callable[..., int], fallback)


#: ``crc32c(data) -> int``: the CRC-32C (Castagnoli) of a bytes-like object.
crc32c: Callable[..., int] = _load()

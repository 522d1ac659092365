"""The C library's allocator thresholds for the Arrow path (``arrow.malloc.tuning``).

A ``poll_arrow()`` of large values builds columns of tens of MB, and decompressing a batch
(the codec libraries) allocates and frees blocks of hundreds of KB to several MB. glibc maps
such blocks anew and gives them back to the system when they are freed (above its dynamic
mmap threshold, or at the top of its heap beyond its trim threshold), so the next poll's
blocks fault in page by page: on two cores, 1 KiB lz4 values read through ``poll_arrow()``
spent about a third of their CPU in page faults. With the mmap threshold at 64 MiB and the
trim threshold at 256 MiB freed blocks are reused instead; the process's peak memory does
not change (the blocks are the same size), but up to those sizes freed memory stays with the
process rather than going back to the system.

The thresholds are the process's, so they are set once, only on glibc, and never over a
choice already made through glibc's ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``
environment variables or its ``GLIBC_TUNABLES``.
"""

from __future__ import annotations

import logging
import os
import platform
import threading
from collections.abc import Mapping

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "tune_for_large_blocks"]

logger = logging.getLogger(__name__)

#: Blocks below this size come from the heap (glibc's M_MMAP_THRESHOLD).
MMAP_THRESHOLD = 64 << 20
#: Free memory at the top of the heap kept up to this size (glibc's M_TRIM_THRESHOLD).
TRIM_THRESHOLD = 256 << 20

# mallopt() parameter numbers (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_ENV_CHOICES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold")

_lock = threading.Lock()
_outcome: bool | None = None  # guarded by _lock: None until the first call decided


def _user_chose(environ: Mapping[str, str]) -> bool:
    if any(name in environ for name in _ENV_CHOICES):
        return True
    tunables = environ.get("GLIBC_TUNABLES", "")
    return any(name in tunables for name in _TUNABLES)


def tune_for_large_blocks() -> bool:
    """Set glibc's mmap and trim thresholds for this process (see the module's text), once;
    True when they are set (now or by an earlier call), False where they are left alone
    (another C library, a choice made in the environment, or ``mallopt`` refusing).

    Thread-safety: thread-safe; the first call decides and later ones return its outcome.
    """
    global _outcome
    with _lock:
        if _outcome is None:
            _outcome = _tune()
        return _outcome


def _tune() -> bool:
    if _user_chose(os.environ):
        logger.debug("malloc thresholds left as the environment sets them")
        return False
    if platform.libc_ver()[0] != "glibc":
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # The mmap threshold first: setting either one ends glibc's own adjustment of both.
    ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    logger.debug("malloc thresholds for large blocks set: %s", ok)
    return ok

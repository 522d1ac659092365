"""The allocator thresholds the Arrow path sets on glibc (``arrow.malloc.tuning``): large
blocks come from the heap once set, the environment's own choice is kept, and poll_arrow()
sets them once and only when configured to."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.record import malloc_tuning

ROOT = Path(__file__).resolve().parents[2]

glibc_only = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's"
)

# A child process reports how many bytes of a 40 MiB block glibc served by mmap (mallinfo2's
# hblkhd grows by them), after tune_for_large_blocks() if asked; one process per case, as the
# thresholds are the process's.
_CHILD = """
import ctypes, json, sys
from kafkaconsumer.record import malloc_tuning

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
tuned = malloc_tuning.tune_for_large_blocks() if sys.argv[1] == "tune" else None
again = malloc_tuning.tune_for_large_blocks() if sys.argv[1] == "tune" else None
before = libc.mallinfo2().hblkhd
block = libc.malloc(40 << 20)
mapped = libc.mallinfo2().hblkhd - before
libc.free(block)
print(json.dumps({"tuned": tuned, "again": again, "mapped": mapped}))
"""


def _child(mode: str, **env: str) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    clean.pop("GLIBC_TUNABLES", None)
    clean["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@glibc_only
def test_large_blocks_come_from_the_heap_once_tuned() -> None:
    assert _child("plain")["mapped"] >= 40 << 20
    tuned = _child("tune")
    assert tuned == {"tuned": True, "again": True, "mapped": 0}


@glibc_only
@pytest.mark.parametrize(
    "env",
    [
        {"MALLOC_MMAP_THRESHOLD_": "1048576"},
        {"MALLOC_TRIM_THRESHOLD_": "1048576"},
        {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=1048576"},
    ],
)
def test_a_choice_made_in_the_environment_is_kept(env: dict[str, str]) -> None:
    result = _child("tune", **env)
    assert result["tuned"] is False
    assert result["mapped"] >= 40 << 20


def test_poll_arrow_sets_the_thresholds_once_and_only_when_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("pyarrow")
    from kafkaconsumer import KafkaConsumer
    from kafkaconsumer.structs import TopicPartition

    calls: list[int] = []

    def tune() -> bool:
        calls.append(1)
        return True

    monkeypatch.setattr(malloc_tuning, "tune_for_large_blocks", tune)
    for enabled, expected in ((True, 1), (False, 0)):
        calls.clear()
        # Nothing listens there: the polls time out at once with no records.
        consumer = KafkaConsumer(
            {
                "bootstrap.servers": "127.0.0.1:1",
                "arrow.malloc.tuning": enabled,
                "reconnect.backoff.ms": 1000,
            }
        )
        try:
            consumer.assign([TopicPartition("t", 0)])
            for _ in range(3):
                assert consumer.poll_arrow(timeout_ms=0).num_rows == 0
        finally:
            consumer.close(timeout_ms=0)
        assert len(calls) == expected

"""Fetching and building the Java parts of the harness with Maven, once per machine.

Each part (the broker's jars, Keycloak, the schema registry) lives in its own folder of the
cache; a file lock makes concurrent sessions wait for the one fetching, and a ``complete``
marker written last makes a half-done fetch start over.
"""

from __future__ import annotations

import fcntl
import subprocess
from collections.abc import Callable
from pathlib import Path

__all__ = ["once", "run_maven"]


def once(home: Path, stamp: str, make: Callable[[], None]) -> None:
    """Run ``make`` unless ``home`` already holds a completed result; writes ``stamp`` into the
    marker when it succeeds. Sessions racing for the same ``home`` wait for each other."""
    done = home / "complete"
    if done.exists():
        return
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        # Another session may be fetching the same thing: wait for it, then reuse its result.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return
        make()
        done.write_text(f"{stamp}\n")


def run_maven(
    args: list[str],
    *,
    what: str,
    error: type[Exception],
    timeout_s: float,
    produced: Callable[[], bool],
    cwd: Path | None = None,
) -> None:
    """Run ``mvn -q -B args``; raise ``error`` naming ``what`` (with the end of Maven's output)
    when it fails, times out, or leaves ``produced()`` false."""
    try:
        result = subprocess.run(
            ["mvn", "-q", "-B", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise error(f"Maven did not {what} within {timeout_s:.0f} s") from exc
    if result.returncode != 0 or not produced():
        output = (result.stdout + result.stderr)[-3000:]
        raise error(f"Maven could not {what} (exit {result.returncode}): {output}")

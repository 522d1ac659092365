"""Small helpers shared by the test suite."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable


def unique_name(prefix: str = "t") -> str:
    """A topic or group name no other test (or earlier run on the same cluster) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def wait_for(
    condition: Callable[[], object],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition",
) -> object:
    """Poll ``condition`` until it returns a truthy value; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)

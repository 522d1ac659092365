"""Small helpers shared by the test suite."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from benchmarks.harness.cluster_ops import unique_name as unique_name

if TYPE_CHECKING:
    from kafkaconsumer.network.settings import NetworkSettings


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


def network_settings(config: Mapping[str, Any], **fixed: Any) -> NetworkSettings:
    """The network settings of a consumer configured with ``config`` (Java keys), with
    ``fixed`` settings replaced (``max_in_flight_requests_per_connection``, which a consumer's
    configuration cannot set)."""
    from kafkaconsumer.config import ConsumerConfig
    from kafkaconsumer.network.settings import NetworkSettings

    settings = NetworkSettings.from_config(ConsumerConfig(config))
    return settings._replace(**fixed) if fixed else settings


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT.

    A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored
    across fork and exec: a Python child would then never see KeyboardInterrupt (CI runs from
    such a job). The child gets the default disposition back, so Python installs its handler.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)

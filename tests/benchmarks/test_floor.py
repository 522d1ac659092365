"""benchmarks/floor.py: the CPU budget of a read still measures what it says (no timings)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from benchmarks import floor
from tests.consumer.conftest import create_topic, produce, simple_records

pytestmark = pytest.mark.timeout(120)

needs_proc = pytest.mark.skipif(
    not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp"
)


@needs_proc
def test_listening_pid_finds_the_process_behind_a_port() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert floor.listening_pid(server.getsockname()[1]) == os.getpid()
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # bound, never listening
        assert floor.listening_pid(unused.getsockname()[1]) is None


def test_bounds_add_up_the_measured_costs() -> None:
    r = {
        "ceiling_rate": 20e6,
        "receive_us": 0.025,
        "broker_us": 0.025,
        "object_us": 0.1,
        "arrow_us": 0.05,
        "cores": 2,
    }
    got = {what: rate for what, rate, _ in floor.bounds(r)}
    assert got == {
        "object path, one thread": pytest.approx(1e6 / 0.125),
        "object path, receive elsewhere": pytest.approx(1e6 / 0.1),
        "Arrow path, one thread": pytest.approx(1e6 / 0.075),
        "Arrow path, any design, 2 cores": pytest.approx(2e6 / 0.1),
    }
    # Without the broker's CPU (a remote broker) there is no any-design bound.
    assert len(floor.bounds({**r, "broker_us": None})) == 3


@pytest.mark.integration
def test_budget_decodes_every_served_record_on_both_paths(broker: Any) -> None:
    topic = create_topic(broker.bootstrap_servers, 3, prefix="floor")
    produce(broker.bootstrap_servers, topic, simple_records(3, 50, size=100))
    # budget() raises when the two paths disagree on the bytes of the values they read.
    r = floor.budget(broker.bootstrap_servers, topic, 150, repeat=1, cores=2, broker_pid=None)
    assert r["records"] == 150
    assert r["ceiling_rate"] > 0 and r["receive_us"] > 0
    assert r["object_us"] > 0 and r["arrow_us"] > 0
    host, _, port = broker.bootstrap_servers.split(",")[0].rpartition(":")
    if host in ("127.0.0.1", "localhost") and floor.listening_pid(int(port)) is not None:
        assert r["broker_us"] is not None and r["broker_us"] >= 0

"""Leaks: 300 cycles of create, subscribe, poll, close in one process. Threads, open file
descriptors and RSS come back to where they started (RSS within a small allowance: the
allocator keeps some freed memory, and the first cycles warm caches up).

A cycle mostly waits for the broker (join, fetch, leave), so :data:`WORKERS` threads run the
cycles side by side, each with a group of its own: the same 300 consumers come and go in the
process, several at a time, in a fraction of the wall time.

Linux only (it reads /proc/self).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from typing import Any

import pytest

from benchmarks.harness import apache_kafka
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, produce, simple_records
from tests.helpers import unique_name

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self"),
]

CYCLES = 300
WARMUP = 30
WORKERS = 4
# RSS may settle a little above its start (arena fragmentation, interned strings); a leak of
# even 10 KiB per cycle would show as 2.7 MiB over the measured cycles, a real one far more.
RSS_ALLOWANCE = 8 * 1024 * 1024


def rss_bytes() -> int:
    """Resident set size of this process."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def open_fds() -> int:
    """Open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def os_threads() -> int:
    """OS threads of this process (Python's and any native ones)."""
    return len(os.listdir("/proc/self/task"))


def settle(baseline_threads: int) -> None:
    """Let threads a close() stopped finish exiting (join is bounded)."""
    deadline = time.monotonic() + 5
    while threading.active_count() > baseline_threads and time.monotonic() < deadline:
        time.sleep(0.01)
    gc.collect()


def test_create_subscribe_poll_close_cycles(broker: Any) -> None:
    if (
        os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "tansu"
        and apache_kafka.missing_tools() is None
    ):
        pytest.skip(
            "the second (Tansu) pass: the cycles ran on Apache Kafka already, and the "
            "client code they check is the same"
        )
    bootstrap = str(broker.bootstrap_servers)
    topic = create_topic(bootstrap, 2, prefix="leak")
    produce(bootstrap, topic, simple_records(2, 5))
    groups = [unique_name("leak-g") for _ in range(WORKERS)]
    # Tansu holds every first JoinGroup for half the session timeout: 300 joins would take a
    # quarter of an hour there, so on Tansu the cycles assign partitions instead.
    use_group = not broker.is_tansu
    partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]

    def cycle(i: int) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=groups[i % WORKERS],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            # close() waits for the in-flight fetch before the session-closing one (in order).
            fetch_max_wait_ms=10,
            client_id=f"leak-{i}",
        )
        try:
            if use_group:
                consumer.subscribe([topic])
            else:
                consumer.assign(partitions)
            deadline = time.monotonic() + 20
            got = 0
            while not got:
                got = consumer.poll(timeout_ms=200).count()
                assert time.monotonic() < deadline, f"cycle {i}: nothing consumed"
        finally:
            consumer.close(timeout_ms=5000)

    def run_cycles(first: int, last: int) -> None:
        """Cycles ``first`` to ``last - 1``, spread over the workers (worker k takes i % WORKERS
        == k, so a group never has two members at once)."""
        failures: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                for i in range(first + (k - first) % WORKERS, last, WORKERS):
                    cycle(i)
            except BaseException as exc:
                failures.append(exc)

        threads = [
            threading.Thread(target=worker, args=(k,), name=f"leak-worker-{k}")
            for k in range(WORKERS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(200)
        assert not any(t.is_alive() for t in threads), "a worker did not finish"
        if failures:
            raise failures[0]

    py_threads = threading.active_count()
    run_cycles(0, WARMUP)
    settle(py_threads)
    start = (threading.active_count(), os_threads(), open_fds(), rss_bytes())
    samples = []
    for block in range(WARMUP, CYCLES, 30):
        run_cycles(block, min(block + 30, CYCLES))
        samples.append(rss_bytes())
    settle(py_threads)
    end = (threading.active_count(), os_threads(), open_fds(), rss_bytes())
    report = (
        f"threads {start[0]}->{end[0]}, OS threads {start[1]}->{end[1]}, fds "
        f"{start[2]}->{end[2]}, RSS {start[3] >> 10}->{end[3] >> 10} KiB "
        f"(samples {[s >> 10 for s in samples]})"
    )
    print(report)
    assert end[0] == py_threads, report
    assert end[1] <= start[1], report
    assert end[2] <= start[2], report
    assert end[3] - start[3] < RSS_ALLOWANCE, report

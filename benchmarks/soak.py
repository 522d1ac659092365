"""Soak: continuous produce and consume with member churn, sampled every second (not in CI).

A producer process (confluent-kafka, so that its memory is not ours) writes records carrying
their send time at ``--rate`` per second. This process runs a group of ``--members`` consumers
(kafkaconsumer, one thread each, commits after every batch); every ``--churn`` seconds the
oldest member is closed and a new one joins. Every second the script samples this process's
RSS, open file descriptors, threads, and the end-to-end latency of the records consumed in that
second (p50 and max). At the end it writes a CSV and a PNG (matplotlib) and prints the least-
squares slope of RSS over time after the first ``--warmup`` seconds.

::

    python -m benchmarks.soak --duration 1800                  # a 3-broker Apache Kafka cluster
    python -m benchmarks.soak --broker 127.0.0.1:9092 --duration 600 --out /tmp/soak
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from kafkaconsumer.consumer import KafkaConsumer  # noqa: E402
from kafkaconsumer.errors import KafkaError  # noqa: E402


def _produce(bootstrap: str, topic: str, rate: float, stop: Any) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    interval = 1.0 / rate
    next_at = time.monotonic()
    n = 0
    while not stop.is_set():
        value = f"{time.time():.6f}".encode()
        try:
            producer.produce(topic, value=value, key=str(n % 101).encode())
        except BufferError:
            producer.poll(0.05)
            continue
        n += 1
        producer.poll(0)
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    producer.flush(30)


class _Member(threading.Thread):
    def __init__(
        self,
        name: str,
        bootstrap: str,
        topic: str,
        group: str,
        latencies: list[float],
        lock: threading.Lock,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._cfg: dict[str, Any] = {
            "bootstrap_servers": bootstrap,
            "group_id": group,
            "client_id": name,
            "auto_offset_reset": "latest",
            "enable_auto_commit": False,
            "session_timeout_ms": 10_000,
            "heartbeat_interval_ms": 1000,
        }
        self._topic = topic
        self._latencies = latencies
        self._lock = lock
        self._halt = threading.Event()
        self.errors = 0

    def run(self) -> None:
        consumer = KafkaConsumer(**self._cfg)
        try:
            consumer.subscribe([self._topic])
            while not self._halt.is_set():
                try:
                    records = consumer.poll(timeout_ms=200)
                    now = time.time()
                    if records:
                        with self._lock:
                            self._latencies.extend(now - float(r.value) for r in records)
                        consumer.commit_sync()
                except KafkaError:
                    self.errors += 1
        finally:
            consumer.close(timeout_ms=10_000)

    def stop(self) -> None:
        self._halt.set()
        self.join(30)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def _cluster(which: str) -> Iterator[str]:
    if which != "apache3":
        yield which
        return
    from benchmarks.harness.apache_kafka import KafkaCluster

    with KafkaCluster(brokers=3) as cluster:
        yield cluster.bootstrap_servers


def _slope(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


def _plot(rows: list[dict[str, float]], path: str, slope_kib_min: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["t"] / 60 for r in rows]
    fig, axes = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
    axes[0].plot(t, [r["rss_mib"] for r in rows])
    axes[0].set_ylabel("RSS (MiB)")
    axes[0].set_title(f"soak: RSS slope {slope_kib_min:+.1f} KiB/min after warm-up")
    axes[1].plot(t, [r["fds"] for r in rows])
    axes[1].set_ylabel("open fds")
    axes[2].plot(t, [r["threads"] for r in rows])
    axes[2].set_ylabel("threads")
    axes[3].plot(t, [r["lat_p50_ms"] for r in rows], label="p50")
    axes[3].plot(t, [r["lat_max_ms"] for r in rows], label="max", alpha=0.6)
    axes[3].set_yscale("log")
    axes[3].set_ylabel("end-to-end latency (ms)")
    axes[3].legend()
    axes[3].set_xlabel("minutes")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv: list[str] | None = None) -> None:
    """Run the soak (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--broker",
        default="apache3",
        help="apache3 (start a 3-broker Apache Kafka cluster, the default) or the "
        "bootstrap servers of a running cluster",
    )
    ap.add_argument("--duration", type=float, default=1800.0, help="seconds (default 1800)")
    ap.add_argument("--churn", type=float, default=60.0, help="seconds between member swaps")
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--rate", type=float, default=500.0, help="records per second")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--warmup", type=float, default=120.0, help="seconds left out of the RSS slope")
    ap.add_argument("--out", default="soak", help="path prefix of the .csv and .png")
    args = ap.parse_args(argv)

    from confluent_kafka.admin import AdminClient, NewTopic

    with _cluster(args.broker) as bootstrap:
        topic = f"soak-{os.getpid()}-{int(time.time())}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        replication = min(3, len(admin.list_topics(timeout=10).brokers))
        admin.create_topics([NewTopic(topic, args.partitions, replication)])[topic].result(30)
        stop = multiprocessing.Event()
        producer = multiprocessing.Process(
            target=_produce, args=(bootstrap, topic, args.rate, stop), daemon=True
        )
        producer.start()
        lock = threading.Lock()
        latencies: list[float] = []
        members: list[_Member] = []
        serial = 0

        def add_member() -> None:
            nonlocal serial
            m = _Member(f"soak-{serial}", bootstrap, topic, f"{topic}-g", latencies, lock)
            serial += 1
            m.start()
            members.append(m)

        for _ in range(args.members):
            add_member()
        rows: list[dict[str, float]] = []
        start = time.monotonic()
        next_churn = start + args.churn
        errors = 0
        while (now := time.monotonic()) - start < args.duration:
            time.sleep(max(0.0, 1.0 - (now - start) % 1.0))
            if time.monotonic() >= next_churn:
                old = members.pop(0)
                old.stop()
                errors += old.errors
                add_member()
                next_churn += args.churn
            with lock:
                batch, latencies[:] = sorted(latencies), []
            rows.append(
                {
                    "t": time.monotonic() - start,
                    "rss_mib": _rss() / 2**20,
                    "fds": len(os.listdir("/proc/self/fd")),
                    "threads": threading.active_count(),
                    "lat_p50_ms": 1000 * batch[len(batch) // 2] if batch else 0.0,
                    "lat_max_ms": 1000 * batch[-1] if batch else 0.0,
                    "records": len(batch),
                }
            )
        for m in members:
            m.stop()
            errors += m.errors
        stop.set()
        producer.join(60)

    with open(args.out + ".csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    steady = [r for r in rows if r["t"] >= args.warmup] or rows
    slope = _slope([r["t"] / 60 for r in steady], [r["rss_mib"] * 1024 for r in steady])
    _plot(rows, args.out + ".png", slope)
    consumed = sum(r["records"] for r in rows)
    lat = sorted(r["lat_p50_ms"] for r in steady if r["records"])
    print(
        f"soak: {args.duration:.0f} s, {serial} members ({serial - args.members} churned), "
        f"{consumed:.0f} records consumed, {errors} poll/commit errors"
    )
    print(
        f"RSS {rows[0]['rss_mib']:.1f} -> {rows[-1]['rss_mib']:.1f} MiB, slope after "
        f"{args.warmup:.0f} s: {slope:+.1f} KiB/min; fds {rows[0]['fds']:.0f} -> "
        f"{rows[-1]['fds']:.0f}; threads {rows[0]['threads']:.0f} -> {rows[-1]['threads']:.0f}; "
        f"median per-second p50 latency {lat[len(lat) // 2] if lat else 0:.1f} ms"
    )
    print(f"wrote {args.out}.csv and {args.out}.png")


if __name__ == "__main__":
    main()

"""The ``kafkaconsumer`` command.

``kafkaconsumer demo`` starts a local broker (or uses ``--bootstrap-servers``), creates a topic,
produces records into it with every compression codec, reads them all back with a
:class:`~kafkaconsumer.KafkaConsumer` in a consumer group, checks that each record arrived once,
commits, and prints what it saw and how fast.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any, TextIO

from . import __version__

__all__ = ["main", "run_demo"]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _say(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")
    out.flush()


def run_demo(
    bootstrap_servers: str | None = None,
    records: int = 50_000,
    partitions: int = 4,
    timeout_s: float = 120.0,
    out: TextIO = sys.stdout,
) -> int:
    """Produce ``records`` records with every codec, consume them in a group; 0 when all arrived.

    Starts an :class:`~kafkaconsumer.embedded.EmbeddedBroker` when ``bootstrap_servers`` is None.
    """
    from .admin import KafkaAdminClient
    from .consumer import KafkaConsumer
    from .embedded import EmbeddedBroker
    from .producer import KafkaProducer
    from .record import USING_EXTENSION
    from .structs import TopicPartition

    with ExitStack() as stack:
        if bootstrap_servers is None:
            _say(out, "starting the embedded broker (Tansu, in memory) ...")
            broker = stack.enter_context(EmbeddedBroker())
            bootstrap_servers = broker.bootstrap_servers
        _say(out, f"broker: {bootstrap_servers}")
        _say(out, "record decoder: " + ("compiled (Cython)" if USING_EXTENSION else
                                        "pure Python (slower; see the RuntimeWarning above)"))

        topic = f"demo-{uuid.uuid4().hex[:8]}"
        group = f"demo-group-{uuid.uuid4().hex[:8]}"
        admin = KafkaAdminClient({"bootstrap.servers": bootstrap_servers})
        stack.callback(admin.close)
        admin.create_topics({topic: partitions}, timeout_ms=30_000)
        _say(out, f"created topic {topic} with {partitions} partitions")

        per_codec = max(1, records // len(CODECS))
        total = per_codec * len(CODECS)
        started = time.perf_counter()
        for codec in CODECS:
            producer = KafkaProducer(
                {"bootstrap.servers": bootstrap_servers, "compression.type": codec,
                 "linger.ms": 5, "acks": "all"}
            )
            try:
                for i in range(per_codec):
                    producer.send(
                        topic,
                        key=f"key-{i % 97}".encode(),
                        value=f"{codec} record {i}".encode(),
                        headers=[("codec", codec.encode())],
                    )
                producer.flush(timeout_ms=60_000)
            finally:
                producer.close(timeout_ms=10_000)
        produce_s = time.perf_counter() - started
        _say(out, f"produced {total} records ({per_codec} per codec: {', '.join(CODECS)}) "
                  f"in {produce_s:.2f} s")

        consumer = KafkaConsumer(
            {"bootstrap.servers": bootstrap_servers, "group.id": group,
             "auto.offset.reset": "earliest", "enable.auto.commit": False,
             "key.deserializer": "str", "value.deserializer": "str",
             # A short session keeps the demo quick: the Tansu broker holds a new group's first
             # join for about half the session timeout.
             "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}
        )
        stack.callback(consumer.close)
        consumer.subscribe([topic])
        seen: set[tuple[int, int]] = set()
        by_codec: dict[str, int] = {}
        duplicates = 0
        samples: list[Any] = []
        deadline = time.monotonic() + timeout_s
        started = time.perf_counter()
        first_record_at: float | None = None
        while len(seen) < total and time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=1000)
            if batch and first_record_at is None:
                first_record_at = time.perf_counter()
            for record in batch:
                where = (record.partition, record.offset)
                if where in seen:
                    duplicates += 1
                seen.add(where)
                codec = (dict(record.headers).get("codec") or b"?").decode()
                by_codec[codec] = by_codec.get(codec, 0) + 1
                if len(samples) < 3:
                    samples.append(record)
        consume_s = time.perf_counter() - started
        consumer.commit_sync(timeout_ms=30_000)
        committed = consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout_ms=30_000
        )

        _say(out, f"consumed {len(seen)} records in group {group} in {consume_s:.2f} s "
                  f"(the group join took {((first_record_at or started) - started):.2f} s)")
        if first_record_at is not None and len(seen) > 0:
            rate = len(seen) / max(1e-9, time.perf_counter() - first_record_at)
            _say(out, f"  {rate:,.0f} records/s after the join, including this demo's own "
                      "per-record work (str decoding, header lookup, duplicate check); "
                      "benchmarks/consume.py measures the client alone")
        _say(out, "  per codec: " + ", ".join(f"{c}={by_codec.get(c, 0)}" for c in CODECS))
        for record in samples:
            _say(out, f"  e.g. partition {record.partition} offset {record.offset}: "
                      f"key={record.key!r} value={record.value!r}")
        offsets = {tp.partition: (om.offset if om else None) for tp, om in committed.items()}
        _say(out, f"  committed offsets: {dict(sorted(offsets.items()))}")
        ok = len(seen) == total and duplicates == 0
        _say(out, "OK: every record arrived exactly once" if ok else
             f"FAILED: {len(seen)} of {total} records, {duplicates} duplicates")
        return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkaconsumer`` command."""
    parser = argparse.ArgumentParser(prog="kafkaconsumer", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"kafkaconsumer {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="produce and consume on a local (embedded) broker")
    demo.add_argument("--bootstrap-servers", help="use this cluster instead of a local broker")
    demo.add_argument("--records", type=int, default=50_000)
    demo.add_argument("--partitions", type=int, default=4)
    demo.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for records")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "demo":
        return run_demo(args.bootstrap_servers, args.records, args.partitions, args.timeout)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())

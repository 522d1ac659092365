"""Consume throughput: this client against kafka-python, aiokafka and confluent-kafka.

One run: produce ``--records`` values of ``--size`` bytes into ``--partitions`` partitions (one
topic per codec, written once by confluent-kafka), then let each client consume every record of
each topic from the beginning (manual assignment, no group), each in its own subprocess so CPU
time and peak RSS are per client. Every loop touches every record's value (``len(value)``).

    python benchmarks/consume.py                      # embedded broker, 1,000,000 records
    python benchmarks/consume.py --records 200000 --codecs none
    python benchmarks/consume.py --bootstrap 127.0.0.1:9092

Prints records/s, CPU microseconds per record, peak RSS and the ratios of this client to each
peer. Settings are each client's defaults except where the clients differ in meaning: no group,
no auto-commit, start at the beginning.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from typing import Any

CLIENTS = ("kafkaconsumer", "kafka-python", "aiokafka", "confluent-kafka")


# --------------------------------------------------------------------------- workers
# Each worker consumes exactly `records` records and returns (elapsed_s, checksum); the parent
# measures nothing itself: the worker reports its own CPU time and peak RSS.

def _work_kafkaconsumer(bootstrap: str, topic: str, partitions: int, records: int
                        ) -> tuple[float, int]:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from kafkaconsumer.consumer import KafkaConsumer
    from kafkaconsumer.structs import TopicPartition

    c = KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning(tps)
    n = total = 0
    start = time.perf_counter()
    while n < records:
        for rec in c.poll(timeout_ms=1000):
            total += len(rec.value)
            n += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed, total


def _work_kafka_python(bootstrap: str, topic: str, partitions: int, records: int
                       ) -> tuple[float, int]:
    import kafka

    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                            auto_offset_reset="earliest")
    tps = [kafka.TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    n = total = 0
    start = time.perf_counter()
    while n < records:
        for recs in c.poll(timeout_ms=1000).values():
            for rec in recs:
                total += len(rec.value)
                n += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed, total


def _work_aiokafka(bootstrap: str, topic: str, partitions: int, records: int
                   ) -> tuple[float, int]:
    import asyncio

    import aiokafka

    async def run() -> tuple[float, int]:
        c = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                      auto_offset_reset="earliest")
        await c.start()
        tps = [aiokafka.TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        n = total = 0
        start = time.perf_counter()
        while n < records:
            batch = await c.getmany(timeout_ms=1000)
            for recs in batch.values():
                for rec in recs:
                    total += len(rec.value)
                    n += 1
        elapsed = time.perf_counter() - start
        await c.stop()
        return elapsed, total

    return asyncio.run(run())


def _work_confluent(bootstrap: str, topic: str, partitions: int, records: int
                    ) -> tuple[float, int]:
    import confluent_kafka

    # librdkafka requires a group.id even for manual assignment; nothing is committed.
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap,
                                  "group.id": "bench-" + uuid.uuid4().hex[:8],
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
              for p in range(partitions)])
    n = total = 0
    start = time.perf_counter()
    while n < records:
        for msg in c.consume(num_messages=500, timeout=1.0):
            if msg.error():
                continue
            value = msg.value()
            total += len(value) if value is not None else 0
            n += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed, total


WORKERS = {
    "kafkaconsumer": _work_kafkaconsumer,
    "kafka-python": _work_kafka_python,
    "aiokafka": _work_aiokafka,
    "confluent-kafka": _work_confluent,
}


def worker_main(args: argparse.Namespace) -> None:
    """Run one client and print its measurements as one JSON line."""
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    elapsed, checksum = WORKERS[args.worker](args.bootstrap, args.topic, args.partitions,
                                             args.records)
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    # CPU of the whole process (every thread: librdkafka and aiokafka work off-thread too),
    # including start-up and connection; small next to the consume loop at these sizes.
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    print(json.dumps({"client": args.worker, "elapsed_s": elapsed, "cpu_s": cpu,
                      "peak_rss_mb": _peak_rss_mb(usage1), "checksum": checksum,
                      "records": args.records}))


def _peak_rss_mb(usage: resource.struct_rusage) -> float:
    """This process's own peak RSS in MB.

    Linux carries ru_maxrss over fork and exec, so a worker would report the parent's peak (the
    producer that filled the topic); VmHWM belongs to the worker's own address space.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return usage.ru_maxrss / 1024.0


# --------------------------------------------------------------------------- parent

def produce(bootstrap: str, topic: str, partitions: int, records: int, size: int,
            codec: str) -> None:
    """Create ``topic`` and fill it with ``records`` values of ``size`` bytes, round-robin."""
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]
                        )[topic].result(timeout=60)
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                                  "linger.ms": 50, "batch.size": 1_000_000,
                                  "queue.buffering.max.messages": 1_000_000,
                                  "enable.idempotence": False})
    value = bytes(range(256)) * (size // 256 + 1)
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value[i % 256:i % 256 + size], partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    left = p.flush(300)
    if left:
        raise SystemExit(f"{left} records were not acknowledged")


def run_worker(client: str, bootstrap: str, topic: str, partitions: int, records: int,
               timeout_s: float) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", client, "--bootstrap",
           bootstrap, "--topic", topic, "--partitions", str(partitions), "--records", str(records)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if out.returncode != 0:
        return {"client": client, "error": (out.stderr or out.stdout).strip()[-400:]}
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1]
    return dict(json.loads(line))


def print_table(codec: str, results: list[dict[str, Any]], expected_checksum: int) -> None:
    ours = next((r for r in results if r["client"] == "kafkaconsumer" and "error" not in r), None)
    print(f"\ncodec={codec}")
    print(f"{'client':<16}{'records/s':>12}{'CPU us/rec':>12}{'peak RSS MB':>13}"
          f"{'ours x':>9}{'check':>8}")
    for r in results:
        if "error" in r:
            print(f"{r['client']:<16}  failed: {r['error']}")
            continue
        rate = r["records"] / r["elapsed_s"]
        cpu_us = r["cpu_s"] * 1e6 / r["records"]
        ratio = ""
        if ours is not None:
            ratio = f"{(ours['records'] / ours['elapsed_s']) / rate:.2f}"
        ok = "ok" if r["checksum"] == expected_checksum else "BAD"
        print(f"{r['client']:<16}{rate:>12,.0f}{cpu_us:>12.2f}{r['peak_rss_mb']:>13.1f}"
              f"{ratio:>9}{ok:>8}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100, help="value size in bytes")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--codecs", default="none,lz4")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--bootstrap", help="use this cluster instead of the embedded broker")
    ap.add_argument("--timeout", type=float, default=900.0, help="per client run, seconds")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main(args)
        return
    if args.records < 1 or args.size < 1 or args.partitions < 1:
        ap.error("--records, --size and --partitions must be positive")
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    for c in clients:
        if c not in WORKERS:
            ap.error(f"unknown client {c!r}; choose from {', '.join(CLIENTS)}")
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from kafkaconsumer.embedded import EmbeddedBroker
        broker = EmbeddedBroker()
        broker.start()
        bootstrap = broker.bootstrap_servers
    try:
        value = bytes(range(256)) * (args.size // 256 + 1)
        expected = sum(len(value[i % 256:i % 256 + args.size]) for i in range(args.records))
        print(f"{args.records:,} records of {args.size} bytes, {args.partitions} partitions, "
              f"broker {bootstrap}{' (embedded)' if broker else ''}")
        for codec in [c.strip() for c in args.codecs.split(",") if c.strip()]:
            topic = f"bench-{codec}-{uuid.uuid4().hex[:8]}"
            t0 = time.perf_counter()
            produce(bootstrap, topic, args.partitions, args.records, args.size, codec)
            print(f"produced {topic} in {time.perf_counter() - t0:.1f} s")
            results = [run_worker(c, bootstrap, topic, args.partitions, args.records,
                                  args.timeout) for c in clients]
            print_table(codec, results, expected)
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()

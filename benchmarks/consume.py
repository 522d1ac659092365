"""Consume throughput: this client against kafka-python, aiokafka and confluent-kafka, as
fractions of the broker's serve ceiling measured in the same run.

One run: for every combination of ``--sizes``, ``--partitions`` and ``--codecs``, produce
``--records`` values into a fresh topic (written once by confluent-kafka), measure the broker's
serve ceiling on it (``ceiling.py``: a bare Fetch loop reading batch headers only), then let
each client consume every record from the beginning (manual assignment, no group), each in its
own subprocess. Every loop touches every record's value (``len(value)``).

    python benchmarks/consume.py                      # embedded broker, 1,000,000 records
    python benchmarks/consume.py --records 200000 --codecs none
    python benchmarks/consume.py --broker apache     # Apache Kafka, started for the run
    python benchmarks/consume.py --broker apache --repeat 3   # median of three rounds
    python benchmarks/consume.py --broker 127.0.0.1:9092 --sizes 100,1024 --partitions 8,256

Prints, per client: records/s, the fraction of the ceiling, CPU microseconds per record of the
consume loop (every thread of the process: librdkafka and aiokafka work off-thread), the time
until the first records arrived, the rate with that start-up included, peak RSS, this
client's speed divided by the client's, and a checksum check. A markdown table of every row
follows at the end. Settings are each client's defaults except where the clients differ in
meaning: no group, no auto-commit, start at the beginning.

Records/s, its fraction of the ceiling and CPU per record count from the first records on
(the first poll's records and time left out), as the ceiling's do: the ceiling is measured
over connections opened before its clock starts, and at ten million records a second a
client's start-up (connections, metadata, the offset lookup, the first round trip: 20-40 ms)
would be a third of a one-million-record read. The rate with start-up is printed beside it.

With ``--repeat N`` every client reads each topic N times, a round of all clients after
another, each round starting with a different client; the run with the median records/s is
the one reported (all its figures), and the JSON of each row lists every run's rate.
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
from collections.abc import Callable
from typing import Any, NamedTuple

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
from benchmarks.brokers import (  # noqa: E402 (needs the repository root on the path)
    BenchBroker,
    add_broker_arguments,
    bench_broker,
    choice,
)

CLIENTS = ("kafkaconsumer", "kafkaconsumer-arrow", "kafka-python", "aiokafka", "confluent-kafka")
# Rows per poll_arrow() call: the Arrow path is for bulk readers (Spark), which take large
# batches; the object path keeps max.poll.records' default of 500.
ARROW_MAX_RECORDS = 100_000
# The ceiling reads the topic this many times: one pass over 1,000,000 small records takes
# 27-70 ms, and its rate moved 2-3x between runs.
CEILING_PASSES = 5


# --------------------------------------------------------------------------- workers
# Each worker consumes exactly `records` records and returns a Measured: wall and process CPU
# time (every thread) of its consume loop, and where the first records arrived; the parent
# measures nothing itself.


class Measured(NamedTuple):
    """One client's consume loop."""

    elapsed_s: float
    checksum: int
    cpu_s: float
    first_s: float  # wall time until the first poll that returned records
    first_records: int  # how many that poll returned
    first_cpu_s: float


class _Clock:
    """Wall and CPU clocks of a consume loop, and the moment its first records arrived."""

    def __init__(self) -> None:
        self.cpu0 = time.process_time()
        self.start = time.perf_counter()
        self.first: tuple[float, int, float] | None = None

    def seen(self, got: int, n: int) -> None:
        """``got`` records arrived, ``n`` in all; called until the first records came."""
        if got:
            self.first = (
                time.perf_counter() - self.start,
                n,
                time.process_time() - self.cpu0,
            )

    def done(self, total: int) -> Measured:
        elapsed = time.perf_counter() - self.start
        cpu = time.process_time() - self.cpu0
        first = self.first or (0.0, 0, 0.0)
        return Measured(elapsed, total, cpu, first[0], first[1], first[2])


def _pairs(topic: str, partitions: int) -> list[tuple[str, int]]:
    """(topic, partition) of every partition of the comma-separated ``topic`` list."""
    return [(t, p) for t in topic.split(",") for p in range(partitions)]


def _measure(
    step: Callable[[], tuple[int, int]], records: int, close: Callable[[], Any]
) -> Measured:
    """Call ``step`` (one poll: returns records seen and the sum of their value lengths) until
    ``records`` were seen, then ``close`` the client. A function call per poll and a check
    until the first records came are all this adds to a client's own loop."""
    n = total = 0
    clock = _Clock()
    while n < records:
        got, size = step()
        n += got
        total += size
        if clock.first is None:
            clock.seen(got, n)
    result = clock.done(total)
    close()
    return result


def _our_consumer(bootstrap: str, topic: str, partitions: int) -> Any:
    """This client, assigned every partition of ``topic`` from the beginning."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from kafkaconsumer.consumer import KafkaConsumer
    from kafkaconsumer.structs import TopicPartition

    c = KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    tps = [TopicPartition(t, p) for t, p in _pairs(topic, partitions)]
    c.assign(tps)
    c.seek_to_beginning(tps)
    return c


def _work_kafkaconsumer(bootstrap: str, topic: str, partitions: int, records: int) -> Measured:
    c = _our_consumer(bootstrap, topic, partitions)

    def step() -> tuple[int, int]:
        n = total = 0
        for rec in c.poll(timeout_ms=1000):
            total += len(rec.value)
            n += 1
        return n, total

    return _measure(step, records, c.close)


def _work_kafkaconsumer_arrow(
    bootstrap: str, topic: str, partitions: int, records: int
) -> Measured:
    import pyarrow as pa
    import pyarrow.compute as pc

    c = _our_consumer(bootstrap, topic, partitions)
    import kafkaconsumer.record.arrow  # noqa: F401 - loaded up front, as pyarrow is (set-up cost)

    # pyarrow imports pandas on the first scalar it builds (about half a second); that is
    # set-up, not per-record work, so it happens here (poll_arrow's first call would pay it).
    pa.scalar(0)

    def step() -> tuple[int, int]:
        batch = c.poll_arrow(timeout_ms=1000, max_records=ARROW_MAX_RECORDS)
        if not batch.num_rows:
            return 0, 0
        # Every value is read: the sum of their lengths, computed over the column.
        return batch.num_rows, pc.sum(pc.binary_length(batch.column("value"))).as_py()

    return _measure(step, records, c.close)


def _work_kafka_python(bootstrap: str, topic: str, partitions: int, records: int) -> Measured:
    import kafka

    c = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    tps = [kafka.TopicPartition(t, p) for t, p in _pairs(topic, partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)

    def step() -> tuple[int, int]:
        n = total = 0
        for recs in c.poll(timeout_ms=1000).values():
            for rec in recs:
                total += len(rec.value)
                n += 1
        return n, total

    return _measure(step, records, c.close)


def _work_aiokafka(bootstrap: str, topic: str, partitions: int, records: int) -> Measured:
    import asyncio

    import aiokafka

    async def run() -> Measured:
        c = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await c.start()
        tps = [aiokafka.TopicPartition(t, p) for t, p in _pairs(topic, partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        n = total = 0
        clock = _Clock()
        while n < records:
            batch = await c.getmany(timeout_ms=1000)
            got = 0
            for recs in batch.values():
                for rec in recs:
                    total += len(rec.value)
                    got += 1
            n += got
            if clock.first is None:
                clock.seen(got, n)
        result = clock.done(total)
        await c.stop()
        return result

    return asyncio.run(run())


def _work_confluent(bootstrap: str, topic: str, partitions: int, records: int) -> Measured:
    import confluent_kafka

    # librdkafka requires a group.id even for manual assignment; nothing is committed.
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-" + uuid.uuid4().hex[:8],
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign(
        [
            confluent_kafka.TopicPartition(t, p, confluent_kafka.OFFSET_BEGINNING)
            for t, p in _pairs(topic, partitions)
        ]
    )

    def step() -> tuple[int, int]:
        n = total = 0
        for msg in c.consume(num_messages=500, timeout=1.0):
            if msg.error():
                continue
            value = msg.value()
            total += len(value) if value is not None else 0
            n += 1
        return n, total

    return _measure(step, records, c.close)


WORKERS = {
    "kafkaconsumer": _work_kafkaconsumer,
    "kafkaconsumer-arrow": _work_kafkaconsumer_arrow,
    "kafka-python": _work_kafka_python,
    "aiokafka": _work_aiokafka,
    "confluent-kafka": _work_confluent,
}


def worker_main(args: argparse.Namespace) -> None:
    """Run one client and print its measurements as one JSON line."""
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    m = WORKERS[args.worker](args.bootstrap, args.topic, int(args.partitions), args.records)
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    # Imports and client construction are left out of cpu_s (they are start-up, not per-record
    # work, and with bytecode caching off they would dominate small runs); process_s has them.
    process = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    print(
        json.dumps(
            {
                "client": args.worker,
                "elapsed_s": m.elapsed_s,
                "cpu_s": m.cpu_s,
                "first_s": m.first_s,
                "first_records": m.first_records,
                "first_cpu_s": m.first_cpu_s,
                "process_cpu_s": process,
                "peak_rss_mb": _peak_rss_mb(usage1),
                "checksum": m.checksum,
                "records": args.records,
            }
        )
    )


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


def produce(
    bootstrap: str, topic: str, partitions: int, records: int, size: int, codec: str
) -> None:
    """Create ``topic`` and fill it with ``records`` values of ``size`` bytes, round-robin."""
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[
        topic
    ].result(timeout=60)
    p = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": False,
        }
    )
    value = bytes(range(256)) * (size // 256 + 1)
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value[i % 256 : i % 256 + size], partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    left = p.flush(300)
    if left:
        raise SystemExit(f"{left} records were not acknowledged")


def run_worker(
    client: str, bootstrap: str, topic: str, partitions: int, records: int, timeout_s: float
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        client,
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--partitions",
        str(partitions),
        "--records",
        str(records),
    ]
    return _run_json(client, cmd, timeout_s)


def run_ceiling(bootstrap: str, topic: str, records: int, timeout_s: float) -> dict[str, Any]:
    """The broker's serve ceiling on ``topic`` (``ceiling.py`` in its own process)."""
    cmd = [
        sys.executable,
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "ceiling.py"),
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--records",
        str(records),
        "--json",
        "--timeout",
        str(timeout_s),
        "--passes",
        str(CEILING_PASSES),
    ]
    return _run_json("ceiling", cmd, timeout_s)


def _run_json(client: str, cmd: list[str], timeout_s: float) -> dict[str, Any]:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"client": client, "error": f"no result within {timeout_s:.0f} s"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"client": client, "error": (out.stderr or out.stdout).strip()[-400:]}
    return dict(json.loads(lines[-1]))


def _after_first(r: dict[str, Any]) -> tuple[float, float, float] | None:
    """(records, wall s, CPU s) after the first poll's records; None when that leaves too
    little to measure (the first poll brought half or more) or the result has no first poll
    (the ceiling)."""
    first = r.get("first_records")
    if first is None or first * 2 > r["records"]:
        return None
    return (
        float(r["records"] - first),
        float(r["elapsed_s"] - r["first_s"]),
        float(r["cpu_s"] - r["first_cpu_s"]),
    )


def rate(r: dict[str, Any]) -> float:
    """Records per second of one result, from its first records on (see the module doc)."""
    after = _after_first(r)
    if after is None or after[1] <= 0:
        return cold_rate(r)
    return after[0] / after[1]


def cold_rate(r: dict[str, Any]) -> float:
    """Records per second of one result with its start-up (the whole loop)."""
    return float(r["records"]) / float(r["elapsed_s"])


def cpu_us(r: dict[str, Any]) -> float:
    """CPU microseconds per record, from the first records on."""
    after = _after_first(r)
    if after is None:
        return float(r["cpu_s"]) * 1e6 / float(r["records"])
    return after[2] * 1e6 / after[0]


def first_ms(r: dict[str, Any]) -> str:
    """Milliseconds until the first records ('' for the ceiling)."""
    return f"{r['first_s'] * 1000:.0f}" if "first_s" in r else ""


def print_table(
    label: str,
    ceiling: dict[str, Any] | None,
    results: list[dict[str, Any]],
    expected_checksum: int,
) -> None:
    ours = next((r for r in results if r["client"] == "kafkaconsumer" and "error" not in r), None)
    top = rate(ceiling) if ceiling is not None and "error" not in ceiling else None
    print(f"\n{label}")
    if top is None:
        print(f"  ceiling failed: {ceiling.get('error') if ceiling else 'not measured'}")
    else:
        print(f"  ceiling {top:,.0f} records/s")
    print(
        f"{'client':<20}{'records/s':>12}{'ceiling':>9}{'CPU us/rec':>12}{'first ms':>10}"
        f"{'w/ start-up':>13}{'peak RSS MB':>13}{'ours x':>9}{'check':>8}"
    )
    for r in results:
        if "error" in r:
            print(f"{r['client']:<20}  failed: {r['error']}")
            continue
        ratio = f"{rate(ours) / rate(r):.2f}" if ours is not None else ""
        frac = f"{rate(r) / top:.0%}" if top else ""
        ok = "ok" if r["checksum"] == expected_checksum else "BAD"
        print(
            f"{r['client']:<20}{rate(r):>12,.0f}{frac:>9}{cpu_us(r):>12.2f}{first_ms(r):>10}"
            f"{cold_rate(r):>13,.0f}{r['peak_rss_mb']:>13.1f}{ratio:>9}{ok:>8}"
        )


def markdown(rows: list[dict[str, Any]]) -> str:
    """One markdown table of every (size, partitions, codec, client) result."""
    out = [
        "| size | partitions | codec | client | records/s | of ceiling | CPU us/record "
        "| first records ms | records/s with start-up | peak RSS MB |",
        "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        r = row["result"]
        head = f"| {row['size']} | {row['partitions']} | {row['codec']} | {r['client']} "
        if "error" in r:
            out.append(head + "| failed | | | | | |")
            continue
        top = row["ceiling_rate"]
        client = r["client"] != "ceiling"
        frac = f"{rate(r) / top:.0%}" if top and client else ""
        cold = f"{cold_rate(r):,.0f}" if client else ""
        rss = f"{r['peak_rss_mb']:.0f}" if "peak_rss_mb" in r else ""
        out.append(
            head + f"| {rate(r):,.0f} | {frac} | {cpu_us(r):.2f} | {first_ms(r)} | {cold} | {rss} |"
        )
    return "\n".join(out)


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median records/s of one client's runs (the lower middle one of an
    even count); a failed run, if any, is reported instead: a failure is never hidden."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    ordered = sorted(runs, key=rate)
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    if len(runs) > 1:
        chosen["runs"] = [round(rate(r)) for r in runs]
    return chosen


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument(
        "--sizes",
        "--size",
        default="100",
        help="value sizes in bytes, comma-separated (e.g. 100,1024)",
    )
    ap.add_argument(
        "--partitions", default="8", help="partition counts, comma-separated (e.g. 8,256)"
    )
    ap.add_argument("--codecs", default="none,lz4")
    ap.add_argument(
        "--topics",
        type=int,
        default=1,
        help="spread --records evenly over this many topics of --partitions each",
    )
    ap.add_argument("--clients", default=",".join(CLIENTS))
    add_broker_arguments(ap)
    ap.add_argument("--timeout", type=float, default=900.0, help="per client run, seconds")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each client per topic, in a rotated order each round; the run with the "
        "median records/s is reported",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main(args)
        return
    try:
        sizes = _int_list(args.sizes)
        partition_counts = _int_list(args.partitions)
    except ValueError:
        ap.error("--sizes and --partitions take comma-separated integers")
    if args.repeat < 1:
        ap.error("--repeat must be positive")
    if args.topics < 1 or args.records % args.topics:
        ap.error("--topics must be positive and divide --records")
    if args.records < 1 or not sizes or not partition_counts or min(sizes + partition_counts) < 1:
        ap.error("--records, --sizes and --partitions must be positive")
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    for c in clients:
        if c not in WORKERS:
            ap.error(f"unknown client {c!r}; choose from {', '.join(CLIENTS)}")
    with bench_broker(choice(args)) as broker:
        _run(args, broker, sizes, partition_counts, clients)


def _run(
    args: argparse.Namespace,
    broker: BenchBroker,
    sizes: list[int],
    partition_counts: list[int],
    clients: list[str],
) -> None:
    bootstrap = broker.bootstrap
    rows: list[dict[str, Any]] = []
    print(f"{args.records:,} records per topic, broker {bootstrap} ({broker.label})")
    for size in sizes:
        value = bytes(range(256)) * (size // 256 + 1)
        per_topic = args.records // args.topics
        expected = args.topics * sum(len(value[i % 256 : i % 256 + size]) for i in range(per_topic))
        for partitions in partition_counts:
            for codec in [c.strip() for c in args.codecs.split(",") if c.strip()]:
                name = f"bench-{codec}-{size}-{partitions}-{uuid.uuid4().hex[:8]}"
                names = [name] if args.topics == 1 else [f"{name}-{i}" for i in range(args.topics)]
                t0 = time.perf_counter()
                for one in names:
                    produce(bootstrap, one, partitions, per_topic, size, codec)
                print(
                    f"produced {', '.join(names[:3])}{' ...' if len(names) > 3 else ''} in {time.perf_counter() - t0:.1f} s"
                )
                topic = ",".join(names)
                # The best ceiling run, one before each round of the clients and one after
                # them: the broker's page cache is warm for all, and noise only lowers a rate.
                ceilings = []
                runs: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
                for round_no in range(args.repeat):
                    ceilings.append(run_ceiling(bootstrap, topic, args.records, args.timeout))
                    # Each round starts with another client, so that none is always the first
                    # to read a topic just written (the broker and the machine settle during a
                    # run) or always follows the same one.
                    shift = round_no % len(clients)
                    for c in clients[shift:] + clients[:shift]:
                        runs[c].append(
                            run_worker(c, bootstrap, topic, partitions, args.records, args.timeout)
                        )
                ceilings.append(run_ceiling(bootstrap, topic, args.records, args.timeout))
                results = [_median_run(runs[c]) for c in clients]
                good = [c for c in ceilings if "error" not in c]
                ceiling = max(good, key=rate) if good else ceilings[0]
                print_table(
                    f"{size} B, {args.topics} x {partitions} partitions, codec={codec}",
                    ceiling,
                    results,
                    expected,
                )
                top = rate(ceiling) if "error" not in ceiling else None
                for r in [ceiling, *results]:
                    rows.append(
                        {
                            "size": size,
                            "partitions": (
                                partitions if args.topics == 1 else f"{args.topics}x{partitions}"
                            ),
                            "codec": codec,
                            "ceiling_rate": top,
                            "result": r,
                        }
                    )
    print("\n" + markdown(rows))


if __name__ == "__main__":
    main()

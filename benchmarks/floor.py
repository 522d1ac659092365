"""The CPU budget of one read: what the broker, the socket and our decoders each cost per
record on this machine, and the fastest any consumer design could read at from it.

    python benchmarks/floor.py --broker apache --records 1000000     # start Apache Kafka
    python benchmarks/floor.py --bootstrap 127.0.0.1:9092 --topic t --records 1000000

On one topic (written here unless ``--topic`` names one holding ``--records`` records from
offset 0 on), it measures:

- the serve ceiling (``ceiling.py``, five passes): records/s, the client's CPU per record
  (the socket's copy into user memory and the batch-header walk: what receiving costs) and,
  when the broker runs on this machine, the broker process's CPU per record;
- each decoder alone, on the very bytes the broker served (captured once, then decoded from
  memory, CRCs checked): the object path (``decode_fetched_records`` plus the consume
  benchmark's loop, ``total += len(record.value)``, records freed after each partition's data)
  and the Arrow path (partitions decoded into one builder of 100,000 rows, assembled into a
  ``pyarrow.RecordBatch`` and its value lengths summed, as ``poll_arrow()`` and the benchmark
  do).

From these it prints upper bounds, as fractions of the ceiling: the object path on one thread
(decode + receive) and with its socket reads moved to another thread (record objects are made
under the GIL, so the decoding itself cannot be spread), the Arrow path on one thread, and the
Arrow path under any design whatever (decoding and receiving spread perfectly over every core)
once the broker's own CPU is counted, on a machine where the broker shares the cores. ``poll()`` bookkeeping, timers and metrics
come on top: the real clients are below these bounds. CPU is process time (every thread),
best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import ceiling  # noqa: E402
from benchmarks.brokers import add_broker_arguments, bench_broker, choice  # noqa: E402

ARROW_ROWS = 100_000  # rows per poll_arrow() in consume.py


def listening_pid(port: int) -> int | None:
    """The pid of the local process listening on TCP ``port`` (Linux /proc), or None."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local address "HEX_IP:HEX_PORT", state 0A is LISTEN
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                inodes.add(fields[9])
    if not inodes:
        return None
    targets = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in targets:
                    return int(proc.name)
        except OSError:
            continue
    return None


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def capture(bootstrap: str, topic: str, records: int) -> list[tuple[str, int, int, bytes]]:
    """One pass of the ceiling's fetch loop, keeping every partition's records bytes."""
    kept: list[tuple[str, int, int, bytes]] = []
    ceiling.measure(bootstrap, topic, records, keep=kept)
    return kept


def _best_cpu(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    """(best CPU seconds of ``repeat`` calls of ``run``, what the last one returned)."""
    best = float("inf")
    out = 0
    for _ in range(repeat):
        t0 = time.process_time()
        out = run()
        best = min(best, time.process_time() - t0)
    return best, out


def object_path(chunks: list[tuple[str, int, int, bytes]]) -> Callable[[], int]:
    """The object decoder and the consume benchmark's per-record loop."""
    from kafkaconsumer.record import decode_fetched_records

    def run() -> int:
        total = 0
        for topic, partition, offset, raw in chunks:
            result = decode_fetched_records(raw, topic, partition, offset, check_crcs=True)
            for record in result.records:
                total += len(record.value)
        return total

    return run


def arrow_path(chunks: list[tuple[str, int, int, bytes]]) -> Callable[[], int]:
    """The Arrow builder as poll_arrow() uses it, and the benchmark's sum of value lengths."""
    import pyarrow.compute as pc

    from kafkaconsumer.record.arrow import ArrowBuilder

    def run() -> int:
        total = 0
        builder = None
        for topic, partition, offset, raw in chunks:
            if builder is None:
                builder = ArrowBuilder(len(raw))
            builder.decode(raw, topic, partition, offset, check_crcs=True)
            if builder.num_rows >= ARROW_ROWS:
                batch, _ = builder.finish()
                total += pc.sum(pc.binary_length(batch.column("value"))).as_py()
                builder = None
        if builder is not None:
            batch, _ = builder.finish()
            total += pc.sum(pc.binary_length(batch.column("value"))).as_py()
        return total

    return run


def budget(
    bootstrap: str, topic: str, records: int, repeat: int, cores: int, broker_pid: int | None
) -> dict[str, Any]:
    """Measure everything; the bounds are records/s (see the module docstring)."""
    chunks = capture(bootstrap, topic, records)
    n = sum(ceiling.count_batches(raw)[0] for _, _, _, raw in chunks)
    pid = broker_pid
    if pid is None:
        port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
        pid = listening_pid(port)
    passes = 5
    broker0 = process_cpu_s(pid) if pid else None
    ceil = ceiling.measure(bootstrap, topic, records, passes=passes)
    broker_us = None
    if pid and broker0 is not None:
        broker_us = (process_cpu_s(pid) - broker0) / ceil["records"] * 1e6
    ceiling_rate = ceil["records"] / ceil["elapsed_s"]
    recv_us = ceil["cpu_s"] / ceil["records"] * 1e6
    obj_s, obj_total = _best_cpu(object_path(chunks), repeat)
    result: dict[str, Any] = {
        "records": n,
        "ceiling_rate": ceiling_rate,
        "receive_us": recv_us,
        "broker_us": broker_us,
        "object_us": obj_s / n * 1e6,
        "cores": cores,
    }
    result["arrow_us"] = None
    if _arrow_builder_available():
        arrow_s, arrow_total = _best_cpu(arrow_path(chunks), repeat)
        if arrow_total != obj_total:
            raise SystemExit(f"the two paths disagree: {obj_total} != {arrow_total} bytes")
        result["arrow_us"] = arrow_s / n * 1e6
    return result


def _arrow_builder_available() -> bool:
    try:
        from kafkaconsumer.record.arrow import builder_available
    except ImportError:  # no pyarrow
        return False
    return builder_available()


def bounds(r: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(what, records/s, how) of each upper bound."""
    recv = r["receive_us"]
    out = [
        ("object path, one thread", 1e6 / (r["object_us"] + recv), "decode + receive"),
        # Record objects are made under the GIL: only the socket reads could move elsewhere.
        ("object path, receive elsewhere", 1e6 / r["object_us"], "decode alone, GIL-bound"),
    ]
    if r["arrow_us"] is not None:
        out.append(("Arrow path, one thread", 1e6 / (r["arrow_us"] + recv), "decode + receive"))
        if r["broker_us"] is not None:
            cores = r["cores"]
            out.append(
                (
                    f"Arrow path, any design, {cores} cores",
                    cores * 1e6 / (r["arrow_us"] + recv + r["broker_us"]),
                    "decode + receive + broker spread perfectly over every core",
                )
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_broker_arguments(ap)
    ap.add_argument("--topic", help="an existing topic (default: write one)")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100, help="value bytes of a written topic")
    ap.add_argument("--partitions", type=int, default=8, help="of a written topic")
    ap.add_argument("--codec", default="none", help="of a written topic")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--broker-pid", type=int, help="default: found from the listening port")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    with bench_broker(choice(args)) as broker:
        topic = args.topic
        if topic is None:
            from benchmarks.consume import produce

            topic = f"floor-{args.codec}-{args.size}-{args.partitions}-{uuid.uuid4().hex[:8]}"
            produce(broker.bootstrap, topic, args.partitions, args.records, args.size, args.codec)
        r = budget(broker.bootstrap, topic, args.records, args.repeat, cores, args.broker_pid)
    r["broker"] = broker.label
    r["topic"] = topic
    if args.json:
        print(json.dumps(r))
        return
    print(f"{r['records']:,} records of {topic} on {broker.label}, {cores} cores")
    print(f"  ceiling                {r['ceiling_rate']:>14,.0f} records/s")
    print(f"  receive (client CPU)   {r['receive_us']:>14.3f} us/record")
    broker_us = r["broker_us"]
    print(
        "  broker CPU             "
        + (f"{broker_us:>14.3f} us/record" if broker_us is not None else "  (not local)")
    )
    print(f"  object decode + loop   {r['object_us']:>14.3f} us/record")
    if r["arrow_us"] is not None:
        print(f"  Arrow decode + sum     {r['arrow_us']:>14.3f} us/record")
    print("upper bounds:")
    for what, rate, how in bounds(r):
        share = rate / r["ceiling_rate"]
        print(f"  {what:<36} {rate:>14,.0f} records/s  {share:>5.0%} of ceiling  ({how})")


if __name__ == "__main__":
    main()

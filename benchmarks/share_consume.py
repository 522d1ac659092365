"""Share-group consume throughput: KafkaShareConsumer against confluent-kafka's ShareConsumer
and Java's own share consumer (``org.apache.kafka.tools.ShareConsumerPerformance``), on one
Apache Kafka broker started for the run, beside the broker's own ceiling.

One run: produce ``--records`` values of ``--size`` bytes into a fresh topic of
``--partitions`` partitions (written once by confluent-kafka), then for each client and each
member count of ``--members`` let a fresh share group (``share.auto.offset.reset=earliest``)
consume every record with implicit acknowledgement. Our client and confluent-kafka run each
member in its own process; Java runs its members as threads of one JVM (``--threads``), as its
tool does. Every loop touches every record's value (``len(value)``; for ``poll_arrow()`` the
sum of the value column's lengths).

The clients:

- ``kafkaconsumer``: ``KafkaShareConsumer.poll()``, one ``ShareConsumerRecord`` per record;
- ``kafkaconsumer-arrow``: ``KafkaShareConsumer.poll_arrow()``, one Arrow batch per poll;
- ``confluent-kafka``: confluent-kafka's ``ShareConsumer.poll()``;
- ``java``: Java's ``ShareConsumerPerformance``;
- ``ceiling``: how fast the broker serves share fetches here. A member of the group (our
  membership) sends ShareFetch after ShareFetch through our protocol layer, each accepting the
  records acquired by the one before (piggybacked, as implicit acknowledgement does), and never
  decodes a record batch: it counts the acquired offsets and the bytes of the records field.
  No client that decodes and hands out records can go faster against this broker.

``--max-poll-records`` sets ``max.poll.records`` of our members (``kafkaconsumer``,
``kafkaconsumer-arrow``, ``ceiling``), which is what our ShareFetch asks for; it defaults to
the consumer's default.

    python benchmarks/share_consume.py                         # 1,000,000 records, 8 partitions
    python benchmarks/share_consume.py --records 200000 --members 1,4
    python benchmarks/share_consume.py --clients kafkaconsumer,java --partitions 2

Before the runs, one record is read through a throwaway share group, so that the broker's
first share group (which creates the share-state topic) is not charged to the first client.

Prints, per client and member count: records/s and CPU microseconds per record. The clock
runs, for every client, from just before the members subscribe to the moment the last record
was read (what Java's tool measures), so joining the share group is included. CPU is the
members' process CPU over the same span for the Python clients; for Java it is the whole
JVM's CPU (start-up and JIT compilation included: the tool reports no narrower figure), so
Java's CPU per record is an upper bound.

Java's tool comes from the ``kafka-tools`` jar, which the broker harness does not fetch: it is
resolved with Maven into the harness's cache beside the broker jars on first use.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

CLIENTS = ("kafkaconsumer", "kafkaconsumer-arrow", "confluent-kafka", "java", "ceiling")
#: A member of several stops when no record came for this long: the group may be done.
IDLE_S = 3.0
# Records read before the measured runs (at most --records): see warm_up().
WARM_UP_RECORDS = 500_000
#: How long a member waits for its first record before the idle time starts counting.
JOIN_GRACE_S = 20.0


# ---------------------------------------------------------------------------- members
def _our_configs(bootstrap: str, group: str, max_poll_records: int | None) -> dict[str, Any]:
    configs: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group}
    if max_poll_records:
        configs["max.poll.records"] = max_poll_records
    return configs


def _our_member(bootstrap: str, topic: str, group: str, max_poll_records: int | None) -> Any:
    from kafkaconsumer import KafkaShareConsumer

    c = KafkaShareConsumer(_our_configs(bootstrap, group, max_poll_records))

    def step() -> tuple[int, int]:
        n = total = 0
        for record in c.poll(timeout_ms=100):
            value = record.value
            total += len(value) if value is not None else 0
            n += 1
        return n, total

    return c, lambda: c.subscribe([topic]), step, lambda: c.close(timeout_ms=5000)


def _our_arrow_member(bootstrap: str, topic: str, group: str, max_poll_records: int | None) -> Any:
    import pyarrow.compute as pc

    import kafkaconsumer.record.arrow  # noqa: F401  (loaded here, outside the measured span)
    from kafkaconsumer import KafkaShareConsumer

    c = KafkaShareConsumer(_our_configs(bootstrap, group, max_poll_records))

    def step() -> tuple[int, int]:
        batch = c.poll_arrow(timeout_ms=100)
        if not batch.num_rows:
            return 0, 0
        total = pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0
        return batch.num_rows, int(total)

    return c, lambda: c.subscribe([topic]), step, lambda: c.close(timeout_ms=5000)


def _ceiling_member(bootstrap: str, topic: str, group: str, max_poll_records: int | None) -> Any:
    """A share-group member that only fetches: each ShareFetch accepts what the one before
    acquired, and no record batch is decoded (see the module's docstring)."""
    from kafkaconsumer import KafkaShareConsumer
    from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements, AcknowledgeType
    from kafkaconsumer.structs import TopicPartition

    c = KafkaShareConsumer(_our_configs(bootstrap, group, max_poll_records))
    # The consumer's own membership, share sessions and request manager, driven directly.
    member, fetch, client = c._member, c._fetch, c._client
    pending: dict[int, dict[TopicPartition, Acknowledgements]] = {}

    def step() -> tuple[int, int]:
        nonlocal pending
        member.poll()
        c._sync_membership()
        n = total = 0
        for cf in fetch.take_completed_fetches():
            data = cf.partition_data
            raw = data.get("records")
            total += len(raw) if raw else 0
            acks = pending.setdefault(cf.node, {}).setdefault(cf.tp, Acknowledgements())
            for r in data.get("acquired_records") or ():
                first, last = int(r["first_offset"]), int(r["last_offset"])
                acks.add_range(first, last, AcknowledgeType.ACCEPT)
                n += last - first + 1
        fetch.take_completed_acknowledgements()
        fetch.send_fetches(pending)
        pending = {}
        client.poll(timeout_ms=100)
        return n, total

    return c, lambda: c.subscribe([topic]), step, lambda: c.close(timeout_ms=5000)


def _confluent_member(bootstrap: str, topic: str, group: str, _max_poll_records: int | None) -> Any:
    import confluent_kafka

    c = confluent_kafka.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})

    def step() -> tuple[int, int]:
        n = total = 0
        for msg in c.poll(0.1):
            if msg.error():
                continue
            value = msg.value()
            total += len(value) if value is not None else 0
            n += 1
        return n, total

    return c, lambda: c.subscribe([topic]), step, c.close


MEMBERS = {
    "kafkaconsumer": _our_member,
    "kafkaconsumer-arrow": _our_arrow_member,
    "confluent-kafka": _confluent_member,
    "ceiling": _ceiling_member,
}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker_main(args: argparse.Namespace) -> None:
    """One member: consume until it read ``--records`` (all of them: the only member) or
    nothing came for ``--idle`` seconds (after :data:`JOIN_GRACE_S` for the first record);
    print what it saw as one JSON line."""
    _c, subscribe, step, close = MEMBERS[args.worker](
        args.bootstrap, args.topic, args.group, args.max_poll_records
    )
    start_wall, start_cpu = time.time(), _cpu_s()
    subscribe()
    n = total = 0
    last_wall, last_cpu = start_wall, start_cpu
    # Until its first record a member waits for the group to form (and for its share of the
    # partitions); only then does the idle time count.
    last_seen = time.monotonic() + JOIN_GRACE_S
    while n < args.records and time.monotonic() - last_seen < args.idle:
        got, size = step()
        if got:
            n += got
            total += size
            last_seen = time.monotonic()
            last_wall, last_cpu = time.time(), _cpu_s()
    close()
    print(
        json.dumps(
            {
                "records": n,
                "bytes": total,
                "start": start_wall,
                "last": last_wall,
                "cpu_s": last_cpu - start_cpu,
            }
        )
    )


def run_members(
    client: str,
    bootstrap: str,
    topic: str,
    records: int,
    members: int,
    timeout_s: float,
    max_poll_records: int | None = None,
) -> dict[str, Any]:
    """``members`` processes of ``client`` in one fresh share group; the group's totals."""
    group = new_group(bootstrap)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", client]
    cmd += ["--bootstrap", bootstrap, "--topic", topic, "--group", group]
    # With one member it knows when it is done; with several, each waits out the idle time.
    idle = str(IDLE_S if members > 1 else timeout_s)
    cmd += ["--records", str(records), "--idle", idle]
    if max_poll_records:
        cmd += ["--max-poll-records", str(max_poll_records)]
    env = dict(os.environ, PYTHONPATH=_ROOT)
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(members)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=timeout_s + 60)
        if p.returncode != 0:
            raise SystemExit(f"{client} member failed (exit {p.returncode}): {err[-2000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    got = sum(r["records"] for r in results)
    elapsed = max(r["last"] for r in results) - min(r["start"] for r in results)
    return {
        "client": client,
        "members": members,
        "records": got,
        "elapsed_s": elapsed,
        "cpu_s": sum(r["cpu_s"] for r in results),
    }


# ---------------------------------------------------------------------------- Java
def _tools_pom(version: str) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkaconsumer.bench</groupId>
  <artifactId>kafka-tools-{version}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""


def ensure_kafka_tools(version: str) -> Path:
    """The directory of the ``kafka-tools`` jar of ``version`` and its dependencies, resolved
    with Maven into the harness's cache on first use (under a file lock, as the broker's)."""
    from benchmarks.harness.apache_kafka import _cache_root

    home = _cache_root() / f"kafka-tools-{version}"
    libs, done = home / "libs", home / "complete"
    if done.exists():
        return libs
    if shutil.which("mvn") is None:
        raise SystemExit("Java's share consumer needs Maven to fetch kafka-tools (mvn not found)")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return libs
        (home / "pom.xml").write_text(_tools_pom(version))
        staging = home / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        result = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(home / "pom.xml"), "dependency:copy-dependencies"]
            + [f"-DoutputDirectory={staging}", "-DincludeScope=runtime"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if result.returncode != 0 or not any(staging.glob("kafka-tools-*.jar")):
            raise SystemExit(
                f"Maven could not resolve kafka-tools {version}: "
                f"{(result.stdout + result.stderr)[-2000:]}"
            )
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        done.write_text(f"{version}\n")
    return libs


def run_java(
    bootstrap: str, topic: str, records: int, members: int, timeout_s: float, version: str
) -> dict[str, Any]:
    """Java's ShareConsumerPerformance with ``members`` threads in one fresh share group."""
    from benchmarks.harness.apache_kafka import ensure_kafka

    tools = ensure_kafka_tools(version)
    broker_libs = ensure_kafka(version)
    group = new_group(bootstrap)
    cmd = ["java", "-Xmx1g", "-cp", f"{tools}/*:{broker_libs}/*"]
    cmd += ["org.apache.kafka.tools.ShareConsumerPerformance", "--bootstrap-server", bootstrap]
    cmd += ["--topic", topic, "--group", group, "--num-records", str(records)]
    cmd += ["--threads", str(members), "--timeout", str(int(timeout_s * 1000)), "--hide-header"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 120, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(
            f"java failed (exit {out.returncode}): {(out.stdout + out.stderr)[-2000:]}"
        )
    # The last line: start, end, MB, MB/s, records/s, records, fetch time (ms).
    line = [ln for ln in out.stdout.splitlines() if ln.count(",") >= 6][-1]
    fields = [f.strip() for f in line.split(",")]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "client": "java",
        "members": members,
        "records": int(fields[5]),
        "elapsed_s": int(fields[6]) / 1000.0,
        "cpu_s": cpu,
    }


# ---------------------------------------------------------------------------- the run
def new_group(bootstrap: str) -> str:
    """A fresh share-group id, set to start at the earliest offset."""
    from kafkaconsumer.admin import ConfigResource, KafkaAdminClient

    group = "bench-share-" + uuid.uuid4().hex[:8]
    with KafkaAdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.incremental_alter_configs(
            {ConfigResource("group", group): {"share.auto.offset.reset": "earliest"}}
        )
    return group


def warm_up(
    bootstrap: str, records: int = 1, size: int = 10, partitions: int = 1, timeout_s: float = 120.0
) -> None:
    """Read ``records`` records through a throwaway share group, so that neither the broker's
    first share group (which creates the share-state topic and loads its coordinator: seconds
    on a fresh broker) nor the broker's just-in-time compilation of its share-fetch path is
    charged to whichever client runs first."""
    from benchmarks.consume import produce
    from kafkaconsumer import KafkaShareConsumer

    topic = "bench-share-warmup-" + uuid.uuid4().hex[:8]
    produce(bootstrap, topic, partitions, records, size, "none")
    group = new_group(bootstrap)
    with KafkaShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as c:
        c.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline and seen < records:
            seen += len(c.poll(timeout_ms=500))


def rate(r: dict[str, Any]) -> float:
    """Records per second of a row."""
    return float(r["records"] / r["elapsed_s"]) if r["elapsed_s"] > 0 else 0.0


def cpu_us(r: dict[str, Any]) -> float:
    """CPU microseconds per record of a row."""
    return float(r["cpu_s"] * 1e6 / r["records"]) if r["records"] else 0.0


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    lines = [
        "| client | members | records | records/s | CPU µs/record | all read |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['client']} | {r['members']} | {r['records']:,} | {rate(r):,.0f} | "
            f"{cpu_us(r):.2f} | {'yes' if r['records'] >= r['expected'] else 'no'} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Parse the command line and run the benchmark (or, with ``--worker``, one member)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100, help="value size in bytes")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--members", default="1,4", help="member counts, comma-separated")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument(
        "--broker",
        default="apache",
        help="apache (start Apache Kafka 4.4 for the run, the default) or the bootstrap "
        "servers of a running cluster with share groups enabled",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every client this many times, the client order rotating each round (on a "
        "busy machine, alternating rounds shows how much of a gap is noise)",
    )
    ap.add_argument("--timeout", type=float, default=600.0, help="per run, seconds")
    ap.add_argument(
        "--max-poll-records",
        type=int,
        default=None,
        help="max.poll.records of our members (kafkaconsumer, kafkaconsumer-arrow, ceiling)",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--group", help=argparse.SUPPRESS)
    ap.add_argument("--idle", type=float, default=IDLE_S, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main(args)
        return
    clients = [c for c in args.clients.split(",") if c]
    unknown = set(clients) - set(CLIENTS)
    if unknown:
        raise SystemExit(f"unknown clients {sorted(unknown)} (known: {', '.join(CLIENTS)})")
    members = [int(m) for m in args.members.split(",") if m]
    from benchmarks.brokers import bench_broker
    from benchmarks.consume import produce

    with bench_broker(args.broker) as broker:
        version = os.environ.get("KAFKACONSUMER_KAFKA_VERSION") or "4.4.0"
        if args.broker == "apache":
            from benchmarks.harness.apache_kafka import requested_version

            version = requested_version()
        warm_up(broker.bootstrap, min(args.records, WARM_UP_RECORDS), args.size, args.partitions)
        topic = "bench-share-" + uuid.uuid4().hex[:8]
        produce(broker.bootstrap, topic, args.partitions, args.records, args.size, "none")
        print(
            f"{broker.label}: {args.records:,} records of {args.size} B in "
            f"{args.partitions} partitions",
            flush=True,
        )
        rows = []
        for round_no in range(max(1, args.rounds)):
            shift = round_no % len(clients)
            for count in members:
                rows += run_round(
                    clients[shift:] + clients[:shift], count, broker, topic, args, version
                )
        print()
        print(markdown(rows))


def run_round(
    clients: list[str],
    count: int,
    broker: Any,
    topic: str,
    args: argparse.Namespace,
    version: str,
) -> list[dict[str, Any]]:
    """Each of ``clients`` once with ``count`` members, in that order; their rows."""
    rows = []
    for client in clients:
        if client == "java":
            r = run_java(broker.bootstrap, topic, args.records, count, args.timeout, version)
        else:
            r = run_members(
                client,
                broker.bootstrap,
                topic,
                args.records,
                count,
                args.timeout,
                args.max_poll_records,
            )
        r["expected"] = args.records
        rows.append(r)
        print(
            f"{client:16} {count} member(s): {r['records']:>9,} records  "
            f"{rate(r):>12,.0f} records/s  {cpu_us(r):7.2f} CPU µs/record",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    main()

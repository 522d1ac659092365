"""Start-up cost: import plus first records, against the broker round trips alone.

Each run is a fresh interpreter that imports kafkaconsumer, creates a consumer, assigns one
partition and polls until its first record (cold), then does the same again with a second
consumer in the same process (warm: modules imported, codecs built, so only connections and
broker round trips remain). cold - warm is what a short-lived script pays on top of the broker.
Wall and CPU time are both shown (CPU suffers less from other load on the machine).
Runs alternate between the build's precompiled codecs (``protocol/_codecs.marshal``) and codecs
compiled on first use, so the two are compared under the same load.

    python benchmarks/startup.py --bootstrap 127.0.0.1:9092 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
c0 = time.process_time()
import kafkaconsumer
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
t_import = time.perf_counter()
c_import = time.process_time()
if sys.argv[3] == "compile":
    from kafkaconsumer.protocol import api, codegen
    api._CODECS._compiled = codegen._Compiled(None)

def first_record():
    c = KafkaConsumer({"bootstrap.servers": sys.argv[1], "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(sys.argv[2], 0)])
    deadline = time.monotonic() + 30
    while not c.poll(timeout_ms=500):
        if time.monotonic() > deadline:
            raise SystemExit("no record within 30 s")
    c.close()

first_record()
t_cold = time.perf_counter()
c_cold = time.process_time()
first_record()
t_warm = time.perf_counter()
c_warm = time.process_time()
print(json.dumps({"import_ms": (t_import - t0) * 1e3, "cold_ms": (t_cold - t0) * 1e3,
                  "warm_ms": (t_warm - t_cold) * 1e3, "import_cpu_ms": (c_import - c0) * 1e3,
                  "cold_cpu_ms": (c_cold - c0) * 1e3, "warm_cpu_ms": (c_warm - c_cold) * 1e3}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from confluent_kafka import Producer

    topic = f"startup-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": args.bootstrap})
    p.produce(topic, value=b"x", partition=0)
    if p.flush(30):
        raise SystemExit("could not write the record")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    results: dict[str, list[dict[str, float]]] = {"precompiled": [], "compile": []}
    for _ in range(args.runs):
        for mode in results:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, args.bootstrap, topic, mode],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            if out.returncode != 0:
                raise SystemExit(out.stderr[-2000:])
            results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"median of {args.runs} runs, ms (wall / CPU)    import     cold first record"
        "     warm first record         cold - warm"
    )
    for mode, rows in results.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        extra = statistics.median(r["cold_ms"] - r["warm_ms"] for r in rows)
        extra_cpu = statistics.median(r["cold_cpu_ms"] - r["warm_cpu_ms"] for r in rows)
        print(
            f"{mode:<24}{med['import_ms']:>8.0f} /{med['import_cpu_ms']:>5.0f}"
            f"{med['cold_ms']:>14.0f} /{med['cold_cpu_ms']:>5.0f}"
            f"{med['warm_ms']:>16.0f} /{med['warm_cpu_ms']:>5.0f}"
            f"{extra:>14.0f} /{extra_cpu:>5.0f}"
        )


if __name__ == "__main__":
    main()

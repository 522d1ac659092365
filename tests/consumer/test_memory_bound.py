"""Memory stays bounded while consuming a 1 GB topic (about 20 s; part of the regular suite).

The consumer runs in a subprocess so its peak RSS is measured alone; the bound is
3 x fetch.max.bytes + 150 MB (one response being received, one buffered, one being decoded,
plus the interpreter and libraries).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.consumer.conftest import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.own_embedded_broker, pytest.mark.timeout(600)]

TOTAL_BYTES = 1 << 30
VALUE_SIZE = 1000
PARTITIONS = 8
FETCH_MAX_BYTES = 16 * 1024 * 1024

CONSUMER = textwrap.dedent("""
    import json, resource, sys
    from kafkaconsumer.consumer import KafkaConsumer
    from kafkaconsumer.structs import TopicPartition
    bootstrap, topic, partitions, count, fetch_max = sys.argv[1:6]
    c = KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                       "fetch.max.bytes": int(fetch_max)})
    c.assign([TopicPartition(topic, p) for p in range(int(partitions))])
    n = size = 0
    while n < int(count):
        for rec in c.poll(timeout_ms=1000):
            n += 1
            size += len(rec.value)
    c.close()
    # VmHWM is this process's own high-water mark; ru_maxrss is not: Linux carries it over
    # fork and exec, so it would report the parent's peak (the producer's buffers).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
    except OSError:
        pass
    print(json.dumps({"records": n, "bytes": size, "peak_rss_mb": peak}))
""")


def test_consuming_1gb_keeps_rss_bounded() -> None:
    from confluent_kafka import Producer

    from kafkaconsumer.embedded import EmbeddedBroker

    count = TOTAL_BYTES // VALUE_SIZE
    with EmbeddedBroker() as broker:
        topic = create_topic(broker.bootstrap_servers, PARTITIONS, "mem")
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "enable.idempotence": False,
            }
        )
        value = b"m" * VALUE_SIZE
        for i in range(count):
            while True:
                try:
                    producer.produce(topic, value=value, partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(600) == 0
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                CONSUMER,
                broker.bootstrap_servers,
                topic,
                str(PARTITIONS),
                str(count),
                str(FETCH_MAX_BYTES),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["records"] == count and result["bytes"] == count * VALUE_SIZE
    bound_mb = 3 * FETCH_MAX_BYTES / (1024 * 1024) + 150
    print(f"peak RSS {result['peak_rss_mb']:.1f} MB (bound {bound_mb:.0f} MB)")
    assert result["peak_rss_mb"] < bound_mb

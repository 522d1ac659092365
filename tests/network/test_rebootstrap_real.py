"""Rebootstrap on Apache Kafka: every broker of a cluster replaced behind the bootstrap address.

Each test starts two single-node clusters of its own, A and B, with the same topic and the same
first records (B has a few more), and stops them in its ``finally``. A consumer bootstrapped
through an address in front of A reads A's records; then the address is re-pointed to B and A
is stopped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer, TopicPartition
from kafkaconsumer.errors import KafkaTimeoutError
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

FIRST = [f"v{i}".encode() for i in range(10)]
MORE = [f"new{i}".encode() for i in range(5)]


@pytest.fixture(autouse=True)
def _apache_only() -> Iterator[None]:
    from benchmarks.harness import apache_kafka

    if os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "tansu":
        pytest.skip("the Tansu pass checks the embedded broker only")
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        pytest.skip("starts and stops clusters of its own")
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"needs Apache Kafka: {missing}")
    yield


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0


def loaded(cluster: Any, topic: str, values: list[bytes]) -> Any:
    """``cluster`` started, with ``topic`` (one partition) holding ``values``."""
    cluster.start()
    cluster.create_topic(topic, partitions=1)
    produce(cluster.bootstrap_servers, topic, values)
    return cluster


def unassigned(bootstrap: str, **config: Any) -> KafkaConsumer:
    """A consumer that reconnects quickly, not yet assigned."""
    return KafkaConsumer(
        {
            "bootstrap.servers": bootstrap,
            "reconnect.backoff.max.ms": 500,
            "socket.connection.setup.timeout.ms": 2000,
            "socket.connection.setup.timeout.max.ms": 2000,
            **config,
        }
    )


def consumer(bootstrap: str, tp: TopicPartition, **config: Any) -> KafkaConsumer:
    """A consumer that reconnects quickly, assigned ``tp`` from its beginning."""
    c = unassigned(bootstrap, **config)
    start(c, tp)
    return c


def start(c: KafkaConsumer, tp: TopicPartition) -> None:
    """Assign ``tp`` from its beginning."""
    c.assign([tp])
    c.seek_to_beginning([tp])


def read(c: KafkaConsumer, count: int, timeout_s: float = 90) -> list[bytes]:
    """Poll until ``count`` records came (fails after ``timeout_s``)."""
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} records: {got}"
        got.extend(bytes(r.value) for r in c.poll(timeout_ms=500))
    return got


def count_rebootstraps(c: KafkaConsumer) -> list[int]:
    """Record each rebootstrap of the consumer's metadata."""
    md = c._metadata  # noqa: SLF001 - the test watches the client's metadata
    seen: list[int] = []
    original: Callable[[], None] = md.rebootstrap

    def rebootstrap() -> None:
        seen.append(len(md.cluster.brokers()))
        original()

    md.rebootstrap = rebootstrap  # type: ignore[method-assign]  # the test watches the calls
    return seen


def record_cluster_checks(c: KafkaConsumer) -> list[tuple[str, int]]:
    """Record each (cluster id, node id) the consumer's connections name for the broker to
    check (KIP-1242)."""
    recovery = c._net._recovery  # noqa: SLF001 - the test watches what connections send
    seen: list[tuple[str, int]] = []
    original = recovery.expected_cluster

    def expected_cluster(node_id: int, cluster: Any) -> tuple[str, int] | None:
        named = original(node_id, cluster)
        if named is not None:
            seen.append(named)
        return named

    recovery.expected_cluster = expected_cluster  # type: ignore[method-assign]
    return seen


def test_cluster_replaced_behind_bootstrap_address() -> None:
    """Brokers advertised at their own addresses, bootstrap through a proxy: once A stops and
    the proxy leads to B, a rebootstrap consumer finds B and reads on from its position; a
    consumer with metadata.recovery.strategy=none keeps trying A's broker, gets nothing, and
    end_offsets ends in KafkaTimeoutError."""
    from benchmarks.harness.apache_kafka import KafkaCluster
    from benchmarks.harness.proxy import FaultProxy

    topic = unique_name("rebootstrap")
    tp = TopicPartition(topic, 0)
    with ExitStack() as stack:
        a = loaded(KafkaCluster(), topic, FIRST)
        stack.callback(a.stop)
        host, port = a.brokers[0].address.rsplit(":", 1)
        proxy = FaultProxy(host, int(port)).start()
        stack.callback(proxy.stop)
        again = consumer(proxy.address, tp, **{"metadata.recovery.strategy": "rebootstrap"})
        stack.callback(again.close)
        stuck = consumer(proxy.address, tp, **{"metadata.recovery.strategy": "none"})
        stack.callback(stuck.close)
        assert read(again, len(FIRST)) == FIRST
        assert read(stuck, len(FIRST)) == FIRST
        rebootstraps = count_rebootstraps(again)

        b = loaded(KafkaCluster(), topic, FIRST + MORE)
        stack.callback(b.stop)
        host_b, port_b = b.brokers[0].address.rsplit(":", 1)
        proxy.target = (host_b, int(port_b))
        a.stop()

        assert read(again, len(MORE)) == MORE
        assert rebootstraps and rebootstraps[0] == 1
        assert again.position(tp) == len(FIRST + MORE)

        assert stuck.poll(timeout_ms=2000).count() == 0
        with pytest.raises(KafkaTimeoutError):
            stuck.end_offsets([tp], timeout_ms=3000)


def test_cluster_check_detects_the_other_cluster() -> None:
    """Brokers advertised through proxies, bootstrap through one more: the consumers learn from
    A that node 1 is at A's proxy; before they first connect to it, that proxy and the
    bootstrap address are re-pointed to B's broker (the same node id, another cluster). With
    metadata.cluster.check.enable the connection names A's cluster id, B's broker answers
    REBOOTSTRAP_REQUIRED and the consumer rebootstraps into B; without it the consumer names no
    cluster, talks to B at the old address and learns of the new cluster from B's metadata.
    Both read all of B's records."""
    from benchmarks.harness.chaos_cluster import ProxiedKafkaCluster
    from benchmarks.harness.proxy import FaultProxy

    topic = unique_name("cluster-check")
    tp = TopicPartition(topic, 0)
    with ExitStack() as stack:
        a = loaded(ProxiedKafkaCluster(brokers=1), topic, FIRST)
        stack.callback(a.stop)
        b = loaded(ProxiedKafkaCluster(brokers=1), topic, FIRST + MORE)
        stack.callback(b.stop)
        node = a.brokers[0].node_id
        assert b.brokers[0].node_id == node  # the same node id, another cluster
        front = FaultProxy(*a.proxy(node).target).start()
        stack.callback(front.stop)
        # The defaults: rebootstrap, check on. Assigned only once they have A's metadata: a
        # blocking call of an assigned consumer sends its offset reset meanwhile, which would
        # connect it to node 1 before the switch.
        checked = unassigned(front.address)
        stack.callback(checked.close)
        unchecked = unassigned(front.address, **{"metadata.cluster.check.enable": False})
        stack.callback(unchecked.close)
        for c in (checked, unchecked):
            assert c.partitions_for(topic)  # metadata from A, through the bootstrap address
            start(c, tp)
        cluster_a = checked._metadata.cluster.cluster_id  # noqa: SLF001
        assert cluster_a is not None
        rebootstrapped = count_rebootstraps(checked)
        checks = record_cluster_checks(checked)
        no_checks = record_cluster_checks(unchecked)

        a.proxy(node).target = b.proxy(node).target
        front.target = b.proxy(node).target
        a.stop_node(node)

        assert read(checked, len(FIRST + MORE)) == FIRST + MORE
        assert read(unchecked, len(FIRST + MORE)) == FIRST + MORE
        assert (cluster_a, node) in checks
        assert rebootstrapped, "the cluster check did not make the consumer rebootstrap"
        assert not no_checks
        for c in (checked, unchecked):
            cluster = c._metadata.cluster  # noqa: SLF001
            assert cluster.cluster_id not in (None, cluster_a)
            assert c.position(tp) == len(FIRST + MORE)

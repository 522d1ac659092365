"""The Apache Kafka harness itself: jars cache, the 3-broker cluster and its node operations."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import apache_kafka
from kafkaconsumer import KafkaConsumer
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name, wait_for

pytestmark = pytest.mark.integration


def test_missing_tools_names_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    message = apache_kafka.missing_tools()
    assert message is not None and "java" in message and "mvn" in message
    with pytest.raises(apache_kafka.ApacheKafkaError, match="java and mvn"):
        apache_kafka.KafkaCluster().start()


def test_broker_api_versions_of_the_session_broker(broker: Any) -> None:
    versions = broker.api_versions
    assert 18 in versions and 1 in versions  # ApiVersions, Fetch
    low, high = versions[1]
    assert 0 <= low <= high
    assert broker.supports(18, 0)


def test_cluster_has_three_racked_brokers(kafka_cluster: apache_kafka.KafkaCluster) -> None:
    assert [n.node_id for n in kafka_cluster.brokers] == [1, 2, 3]
    assert all(n.props["broker.rack"] == f"rack-{n.node_id}" for n in kafka_cluster.brokers)
    topic = unique_name("cl")
    kafka_cluster.create_topic(topic, partitions=3)
    replicas, isr = kafka_cluster.replicas_of(topic, 0)
    assert sorted(replicas) == [1, 2, 3] and sorted(isr) == [1, 2, 3]
    assert kafka_cluster.leader_of(topic, 0) in (1, 2, 3)
    assert kafka_cluster.coordinator_of(unique_name("g")) in (1, 2, 3)


def test_stopped_leader_moves_and_comes_back(kafka_cluster: apache_kafka.KafkaCluster) -> None:
    topic = unique_name("cl")
    kafka_cluster.create_topic(topic, partitions=1)
    leader = kafka_cluster.leader_of(topic)
    kafka_cluster.stop_node(leader)
    assert not kafka_cluster.node(leader).is_running()
    new_leader = wait_for(
        lambda: (now := kafka_cluster.leader_of(topic)) != leader and now,
        timeout=60,
        message="a new leader",
    )
    assert new_leader in (1, 2, 3)
    # Our consumer reads through the surviving brokers.
    with KafkaConsumer(
        bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000
    ) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        assert consumer.end_offsets([tp], timeout_ms=30000)[tp] == 0
    assert kafka_cluster.heal() == [leader]
    assert kafka_cluster.node(leader).is_running()


def test_cluster_is_healthy_after_a_test_stopped_a_node(
    kafka_cluster: apache_kafka.KafkaCluster,
) -> None:
    # Runs after the test above (file order): the guard restarted what it stopped.
    assert all(n.is_running() for n in kafka_cluster.nodes.values())


def test_nodes_die_with_the_process_that_started_them(tmp_path: Path) -> None:
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(missing)
    if os.environ.get("KAFKACONSUMER_TEST_BROKER", "").lower() == "tansu":
        pytest.skip("the Tansu pass checks the embedded broker only")
    script = (
        "import sys\n"
        "from benchmarks.harness.apache_kafka import KafkaCluster\n"
        "c = KafkaCluster().start()\n"
        "print(c._tmp.name, c.node(1).pid, flush=True)\n"
        "import os; os._exit(0)\n"  # no atexit: only the death signal can stop the broker
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
        cwd=os.getcwd(),
    )
    workdir, pid_text = out.stdout.split()[-2:]
    pid = int(pid_text)

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(gone, timeout=60, message=f"broker pid {pid} to exit")
    shutil.rmtree(workdir, ignore_errors=True)


def test_cluster_ids_never_look_like_an_option() -> None:
    # kafka-storage's parser read an id starting with "-" as an option: 1 start in 64 failed.
    ids = [apache_kafka._cluster_id() for _ in range(5000)]
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)

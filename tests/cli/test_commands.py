"""Each command against the real broker, through a subprocess (``python -m kafkaconsumer``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.structs import TopicPartition
from tests.helpers import default_sigint, unique_name, wait_for
from tests.support.broker_limits import session_timeout_ms

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TS = 1_700_000_000_000


@pytest.fixture
def topic(broker: Any) -> Iterator[str]:
    """A one-partition topic holding three known records (offsets 0-2): ``k0/v0`` ..
    ``k2/v2`` with timestamps TS+0 .. TS+2 and one header ``h=x`` on the first."""
    name = unique_name("cli")
    with KafkaAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics({name: 1}, timeout_ms=30_000)
    producer = KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
    try:
        for i in range(3):
            producer.send(
                name,
                key=f"k{i}".encode(),
                value=f"v{i}".encode(),
                partition=0,
                timestamp_ms=TS + i,
                headers=[("h", b"x")] if i == 0 else None,
            )
            # One batch per record: Tansu's end offset is wrong after a multi-record batch.
            producer.flush(timeout_ms=30_000)
    finally:
        producer.close(timeout_ms=10_000)
    yield name


@pytest.fixture
def kcli(cli: Any, broker: Any) -> Any:
    """``cli`` with ``--bootstrap-server`` naming the session broker."""

    def run(*args: str, **kwargs: Any) -> Any:
        return cli(*args, "--bootstrap-server", broker.bootstrap_servers, **kwargs)

    return run


def _consume(kcli: Any, topic: str, *extra: str, count: int = 3) -> Any:
    run = kcli(
        "consume",
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        "20000",
        *extra,
    )
    assert run.code == 0, run
    return run


def test_consume_text_json_raw_exact(kcli: Any, broker: Any, topic: str) -> None:
    run = _consume(
        kcli,
        topic,
        "--print-timestamp",
        "--print-partition",
        "--print-offset",
        "--print-headers",
        "--print-key",
    )
    assert run.out == (
        f"CreateTime:{TS}\tPartition:0\tOffset:0\th:x\tk0\tv0\n"
        f"CreateTime:{TS + 1}\tPartition:0\tOffset:1\tNO_HEADERS\tk1\tv1\n"
        f"CreateTime:{TS + 2}\tPartition:0\tOffset:2\tNO_HEADERS\tk2\tv2\n"
    )
    assert "Processed a total of 3 messages" in run.err
    run = _consume(kcli, topic, "--format", "json", "--print-key", "--print-offset")
    assert [json.loads(line) for line in run.out.splitlines()] == [
        {"topic": topic, "offset": i, "key": f"k{i}", "value": f"v{i}"} for i in range(3)
    ]
    run = _consume(kcli, topic, "--format", "raw")
    assert run.out == "v0\nv1\nv2\n"
    run = _consume(kcli, topic, "--partition", "0", "--offset", "1", count=2)
    assert run.out == "v1\nv2\n"


def test_max_messages_stops_early(kcli: Any, topic: str) -> None:
    run = _consume(kcli, topic, count=2)
    assert run.out == "v0\nv1\n"
    assert "Processed a total of 2 messages" in run.err


def _lag(kcli: Any, group: str) -> dict[str, Any]:
    run = kcli("groups", "lag", "--group", group, "--json")
    assert run.code == 0, run
    return dict(json.loads(run.out))


def test_group_lag_before_and_after_consuming(kcli: Any, broker: Any, topic: str) -> None:
    group = unique_name("cli-g")
    # Session timeouts are short because Tansu holds a group's first join for half of one.
    # A cluster of one's own may refuse 3 s (group.min.session.timeout.ms): the test does not
    # depend on a short session.
    session = session_timeout_ms(broker.bootstrap_servers, 3000)
    fast = [
        "--property",
        f"session.timeout.ms={session}",
        "--property",
        "heartbeat.interval.ms=500",
    ]
    run = kcli(
        "consume",
        "--topic",
        topic,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        "2",
        *fast,
    )
    assert run.out == "v0\nv1\n", run
    lag = _lag(kcli, group)
    assert lag["partitions"] == [
        {"topic": topic, "partition": 0, "committed_offset": 2, "end_offset": 3, "lag": 1}
    ]
    assert lag["total_lag"] == 1
    run = kcli("consume", "--topic", topic, "--group", group, "--max-messages", "1", *fast)
    assert run.out == "v2\n", run
    assert _lag(kcli, group)["total_lag"] == 0
    run = kcli("groups", "lag", "--group", group)
    assert run.code == 0
    assert topic in run.out and "TOTAL-LAG" in run.out


def _describe(kcli: Any, group: str) -> dict[str, Any]:
    run = kcli("groups", "describe", "--group", group, "--json")
    assert run.code == 0, run
    (described,) = json.loads(run.out)
    return dict(described)


def _committed(broker: Any, group: str, topic: str) -> int | None:
    with KafkaAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        om = admin.list_consumer_group_offsets(group).get(TopicPartition(topic, 0))
    return None if om is None else om.offset


def test_reset_offsets_dry_run_then_execute(kcli: Any, broker: Any, topic: str) -> None:
    group = unique_name("cli-g")
    with KafkaAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 3})
    base = [
        "groups",
        "reset-offsets",
        "--group",
        group,
        "--topic",
        topic,
    ]
    run = kcli(*base, "--to-earliest", "--json")
    assert run.code == 0, run
    plan = json.loads(run.out)
    assert plan["executed"] is False
    assert plan["partitions"] == [
        {"topic": topic, "partition": 0, "previous_offset": 3, "new_offset": 0}
    ]
    assert _committed(broker, group, topic) == 3  # the dry run changed nothing
    run = kcli(*base, "--to-earliest", "--execute")
    assert run.code == 0, run
    assert "committed" in run.out
    assert _committed(broker, group, topic) == 0
    for how, expected in ((["--shift-by", "9"], 3), (["--to-offset", "1"], 1)):
        run = kcli(*base, *how, "--execute")
        assert run.code == 0, (how, run)
        assert _committed(broker, group, topic) == expected, how
    if broker.is_tansu:
        return  # Tansu answers every timestamp lookup with offset 0
    run = kcli(*base, "--by-duration", "PT1M", "--execute")  # no record that young: the end
    assert run.code == 0, run
    assert _committed(broker, group, topic) == 3
    run = kcli(*base, f"--to-datetime={_iso(TS + 1)}", "--execute")
    assert run.code == 0, run
    assert _committed(broker, group, topic) == 1


def _iso(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat()


def test_reset_refuses_a_group_with_members_and_describe_shows_them(
    kcli: Any, broker: Any, topic: str
) -> None:
    group = unique_name("cli-g")
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "session.timeout.ms": session_timeout_ms(broker.bootstrap_servers, 3000),
            "heartbeat.interval.ms": 500,
            "client.id": "member-one",
        }
    )
    try:
        consumer.subscribe([topic])
        wait_for(
            lambda: consumer.poll(timeout_ms=200) is not None and consumer.assignment(), timeout=30
        )
        consumer.commit_sync({TopicPartition(topic, 0): 1})
        run = kcli(
            "groups",
            "reset-offsets",
            "--group",
            group,
            "--all-topics",
            "--to-earliest",
            "--execute",
        )
        assert run.code == 2, run
        assert "Traceback" not in run.err and "no members" in run.err
        described = _describe(kcli, group)
        assert described["state"] == "Stable"
        assert described["offsets"] == [
            {"topic": topic, "partition": 0, "committed_offset": 1, "end_offset": 3, "lag": 2}
        ]
        if broker.is_tansu:
            return  # Tansu describes classic groups as consumer groups, without client ids
        assert described["type"] == "classic"
        (member,) = described["members"]
        assert member["client_id"] == "member-one"
        assert member["assignment"] == [[topic, 0]]
        run = kcli("groups", "describe", "--group", group)
        assert run.code == 0 and "member-one" in run.out and f"{topic}:0" in run.out
        run = kcli("groups", "list", "--json")
        assert run.code == 0
        assert {"group": group, "state": "Stable"}.items() <= next(
            g for g in json.loads(run.out) if g["group"] == group
        ).items()
        # A live group's subscribed topic keeps its offsets (GroupSubscribedToTopic).
        run = kcli("groups", "delete-offsets", "--group", group, "--topic", topic)
        assert run.code == 1 and "GROUP_SUBSCRIBED_TO_TOPIC" in run.err, run
    finally:
        consumer.close()


def test_delete_offsets_and_delete_group(kcli: Any, broker: Any, topic: str) -> None:
    group = unique_name("cli-g")
    with KafkaAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 2})
    run = kcli("groups", "delete-offsets", "--group", group, "--topic", f"{topic}:0")
    if broker.is_tansu and run.code == 1:
        pytest.skip(f"Tansu does not delete offsets: {run.err.strip()}")
    assert run.code == 0, run
    assert _committed(broker, group, topic) is None
    with KafkaAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 2})
    run = kcli("groups", "delete", "--group", group)
    assert run.code == 0, run
    assert f"Deleted group {group}" in run.out
    if broker.is_tansu:
        return  # Tansu's DeleteGroups succeeds on unknown groups
    run = kcli("groups", "delete", "--group", group)
    assert run.code == 1 and "GROUP_ID_NOT_FOUND" in run.err, run


def test_topics_list_and_describe(kcli: Any, broker: Any, topic: str) -> None:
    run = kcli("topics", "list", "--json")
    assert run.code == 0, run
    assert {"topic": topic, "partitions": 1} in json.loads(run.out)
    run = kcli("topics", "describe", "--topic", topic, "--json")
    assert run.code == 0, run
    (described,) = json.loads(run.out)
    assert described["topic"] == topic
    (partition,) = described["partitions"]
    assert partition["partition"] == 0 and partition["leader"] in partition["replicas"]
    assert partition["isr"] == partition["replicas"]
    run = kcli("topics", "describe", "--topic", topic)
    assert run.code == 0 and f"Topic: {topic}" in run.out and "PartitionCount: 1" in run.out
    run = kcli(
        "topics",
        "describe",
        "--topic",
        unique_name("missing"),
    )
    assert run.code == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in run.err, run


def test_describe_configs_of_a_topic(broker: Any) -> None:
    from kafkaconsumer.admin import ConfigResource

    name = unique_name("cli-cfg")
    with KafkaAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics({name: 1}, configs={"retention.ms": "123456789"}, timeout_ms=30_000)
        configs = admin.describe_configs([ConfigResource("topic", name)])
    entries = configs[ConfigResource("topic", name)]
    assert entries["retention.ms"].value == "123456789"
    if not broker.is_tansu:
        assert entries["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
        assert entries["cleanup.policy"].is_default


def test_describe_a_consumer_protocol_group(kcli: Any, broker: Any, topic: str) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu has no KIP-848 consumer groups")
    if not broker.supports(68):
        pytest.skip("the broker's group coordinator does not serve the consumer protocol")
    confluent_kafka = pytest.importorskip("confluent_kafka")
    group = unique_name("cli-848")
    member = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": "rd-member",
        }
    )
    try:
        member.subscribe([topic])
        wait_for(lambda: member.poll(0.2) is not None or bool(member.assignment()), timeout=30)
        wait_for(lambda: bool(member.assignment()), timeout=30)
        described = _describe(kcli, group)
        assert described["type"] == "consumer"
        assert described["state"] in ("Stable", "Reconciling", "Assigning")
        (m,) = described["members"]
        assert m["client_id"] == "rd-member"
        assert m["target_assignment"] == [[topic, 0]]
        run = kcli("groups", "list", "--json")
        listed = next(g for g in json.loads(run.out) if g["group"] == group)
        assert listed["type"] == "consumer"
    finally:
        member.close()


def test_ctrl_c_stops_cleanly_and_commits_what_was_printed(broker: Any, topic: str) -> None:
    import os
    import select
    import signal
    import subprocess
    import sys
    import time

    from tests.cli.conftest import ROOT

    group = unique_name("cli-g")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafkaconsumer",
            "consume",
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--topic",
            topic,
            "--group",
            group,
            "--from-beginning",
            "--property",
            f"session.timeout.ms={session_timeout_ms(broker.bootstrap_servers, 3000)}",
            "--property",
            "heartbeat.interval.ms=500",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=default_sigint,
    )
    assert proc.stdout is not None
    out = b""
    deadline = time.monotonic() + 60
    while out.count(b"\n") < 3 and time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            out += os.read(proc.stdout.fileno(), 4096)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out + rest == b"v0\nv1\nv2\n"
    assert b"Processed a total of 3 messages" in err and b"Traceback" not in err
    assert _committed(broker, group, topic) == 3

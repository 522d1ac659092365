"""``kafkaconsumer share`` and ``kafkaconsumer groups describe`` of a share group, against
Apache Kafka 4.4, through a subprocess."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer import KafkaShareConsumer
from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.protocol import ApiKey
from tests.helpers import unique_name, wait_for
from tests.share.member import produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture
def admin(broker: Any) -> Iterator[KafkaAdminClient]:
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    with KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client


@pytest.fixture
def topic_group(admin: KafkaAdminClient, broker: Any) -> tuple[str, str]:
    """A one-partition topic holding ``v0`` .. ``v4`` and a share group reading it from the
    earliest offset."""
    topic, group = unique_name("cli-share"), unique_name("cli-share-g")
    admin.create_topics({topic: 1})
    produce(broker.bootstrap_servers, topic, 5)
    admin.incremental_alter_configs(
        {ConfigResource("group", group): {"share.auto.offset.reset": "earliest"}}
    )
    return topic, group


def _share(cli: Any, broker: Any, topic: str, group: str, *extra: str) -> Any:
    run = cli(
        "share",
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic",
        topic,
        "--group",
        group,
        "--timeout-ms",
        "20000",
        *extra,
    )
    assert run.code == 0, run
    return run


def _describe(cli: Any, broker: Any, group: str) -> dict[str, Any]:
    run = cli(
        "groups",
        "describe",
        "--json",
        "--group",
        group,
        "--bootstrap-server",
        broker.bootstrap_servers,
    )
    assert run.code == 0, run
    (described,) = json.loads(run.out)
    assert isinstance(described, dict)
    return described


def test_accepts_what_it_prints_and_describe_shows_the_start_offset(
    cli: Any, broker: Any, topic_group: tuple[str, str]
) -> None:
    topic, group = topic_group
    run = _share(
        cli,
        broker,
        topic,
        group,
        "--max-messages",
        "5",
        "--print-offset",
        "--print-delivery-count",
    )
    assert run.out.splitlines() == [f"Offset:{i}\tDeliveryCount:1\tv{i}" for i in range(5)]
    assert "Processed a total of 5 messages" in run.err
    described = _describe(cli, broker, group)
    assert (described["type"], described["state"], described["members"]) == ("share", "Empty", [])
    (row,) = described["offsets"]
    # Every record was accepted: nothing is left. Kafka 4.4 moves the persisted start offset
    # past accepted records lazily, so it is 0 or 5.
    assert (row["topic"], row["partition"], row["end_offset"], row["lag"]) == (topic, 0, 5, 0)
    assert row["start_offset"] in (0, 5)
    # Accepted records are not delivered again.
    again = _share(cli, broker, topic, group, "--timeout-ms", "3000")
    assert again.out == ""


def test_release_redelivers_and_reject_archives(
    cli: Any, broker: Any, topic_group: tuple[str, str]
) -> None:
    topic, group = topic_group
    json_args = ("--format", "json", "--print-offset", "--print-delivery-count")
    first = _share(
        cli, broker, topic, group, "--max-messages", "1", "--ack-type", "release", *json_args
    )
    (line,) = first.out.splitlines()
    assert json.loads(line) == {"topic": topic, "offset": 0, "delivery_count": 1, "value": "v0"}
    # Released: delivered again, counted twice; this time it is rejected.
    second = _share(
        cli, broker, topic, group, "--max-messages", "1", "--ack-type", "reject", *json_args
    )
    (line,) = second.out.splitlines()
    assert json.loads(line) == {"topic": topic, "offset": 0, "delivery_count": 2, "value": "v0"}
    # Rejected: never delivered again. What the earlier runs acquired beyond --max-messages
    # they released unprinted, so the rest arrive now, each once.
    rest = _share(cli, broker, topic, group, "--max-messages", "4", *json_args)
    values = [json.loads(line)["value"] for line in rest.out.splitlines()]
    assert values == ["v1", "v2", "v3", "v4"]
    described = _describe(cli, broker, group)
    assert [r["lag"] for r in described["offsets"]] == [0]


def test_describe_shows_the_members_and_their_assignment(
    cli: Any, broker: Any, topic_group: tuple[str, str]
) -> None:
    topic, group = topic_group
    with KafkaShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "client.id": "cli-m"}
    ) as member:
        member.subscribe([topic])
        wait_for(lambda: len(member.poll(timeout_ms=500)) > 0, timeout=30)

        def assigned() -> bool:
            d = _describe(cli, broker, group)
            return bool(d["members"]) and bool(d["members"][0]["assignment"])

        wait_for(assigned, timeout=30, interval=0.5)
        described = _describe(cli, broker, group)
        assert described["state"] == "Stable" and described["assignor"]
        (m,) = described["members"]
        assert m["client_id"] == "cli-m" and m["subscribed_topics"] == [topic]
        assert m["assignment"] == [[topic, 0]]
        (row,) = described["offsets"]
        assert (row["topic"], row["partition"], row["end_offset"]) == (topic, 0, 5)
        text = cli(
            "groups", "describe", "--group", group, "--bootstrap-server", broker.bootstrap_servers
        )
        assert text.code == 0, text
        assert "Type: share" in text.out and "START-OFFSET" in text.out
        assert m["member_id"] in text.out


def test_group_start_by_duration_skips_older_records(
    cli: Any, broker: Any, admin: KafkaAdminClient
) -> None:
    """``--group-start by_duration:PT1H`` sets the group's start: only the records of the last
    hour are printed."""
    topic, group = unique_name("cli-share-bd"), unique_name("cli-share-bd-g")
    admin.create_topics({topic: 1})
    now = int(time.time() * 1000)
    produce(broker.bootstrap_servers, topic, 2, timestamp_ms=now - 3 * 3_600_000)
    produce(broker.bootstrap_servers, topic, 2, timestamp_ms=now - 60_000)
    run = _share(
        cli,
        broker,
        topic,
        group,
        "--group-start",
        "by_duration:PT1H",
        "--max-messages",
        "2",
        "--print-offset",
    )
    assert run.out.splitlines() == ["Offset:2\tv0", "Offset:3\tv1"]

"""Which version of each API this client uses against the session's broker (Kafka 4.0
removed the old protocol versions, KIP-896; 3.9 still accepts them).

For every API both sides know, the version chosen after ApiVersions is the highest both support
and never below the broker's minimum. For the Apache Kafka lines we test against, the versions
are also pinned in a table, so that a change in what we send to a real broker is a visible
decision (update the table with the reason).

Run on 3.9: ``KAFKACONSUMER_KAFKA_VERSION=3.9.2 python3 -m pytest tests/network/test_api_versions_real.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.protocol import SUPPORTED_VERSIONS, ApiKey
from tests.network.conftest import Factory
from tests.network.kafka_ops import any_node

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

#: The versions this client negotiates with each Apache Kafka line (major.minor of the broker).
_CONSUMER_APIS = {
    "API_VERSIONS": 4,
    "METADATA": 12,
    "FETCH": 17,
    "LIST_OFFSETS": 9,
    "OFFSET_FOR_LEADER_EPOCH": 4,
    "FIND_COORDINATOR": 6,
    "JOIN_GROUP": 9,
    "SYNC_GROUP": 5,
    "HEARTBEAT": 4,
    "LEAVE_GROUP": 5,
    "OFFSET_COMMIT": 9,
    "OFFSET_FETCH": 9,
    "SASL_HANDSHAKE": 1,
    "SASL_AUTHENTICATE": 2,
    "CONSUMER_GROUP_HEARTBEAT": 1,
}
_ADMIN_APIS = {
    "CREATE_TOPICS": 7,
    "DELETE_TOPICS": 6,
    "CREATE_PARTITIONS": 3,
    "DELETE_RECORDS": 2,
    "DESCRIBE_GROUPS": 5,
    "LIST_GROUPS": 5,
    "DELETE_GROUPS": 2,
    "PRODUCE": 11,
    "INIT_PRODUCER_ID": 5,
    "CONSUMER_GROUP_DESCRIBE": 1,
}
EXPECTED: dict[str, dict[str, int]] = {
    # 4.4 adds ApiVersions v5 (the cluster check, KIP-1242) and Metadata v13 (a top-level
    # error code for REBOOTSTRAP_REQUIRED, KIP-1102).
    "4.4": {**_CONSUMER_APIS, **_ADMIN_APIS, "API_VERSIONS": 5, "METADATA": 13},
    # 3.9 offers the KIP-848 heartbeat and describe at v0 only (v1 came with the 4.0 GA).
    "3.9": {
        **_CONSUMER_APIS,
        **_ADMIN_APIS,
        "CONSUMER_GROUP_HEARTBEAT": 0,
        "CONSUMER_GROUP_DESCRIBE": 0,
    },
}


def _negotiated(make_client: Factory, bootstrap: str) -> tuple[dict[str, int], Any]:
    cnc = make_client(bootstrap)
    node = any_node(cnc)
    broker_ranges = cnc.client.broker_api_versions(node)
    chosen = {
        ApiKey(key).name: version
        for key in SUPPORTED_VERSIONS
        if (version := cnc.api_version(node, key)) is not None
    }
    return chosen, broker_ranges


def test_negotiated_version_is_the_highest_common_one(broker: Any, make_client: Factory) -> None:
    chosen, ranges = _negotiated(make_client, broker.bootstrap_servers)
    assert ranges, "the broker advertised no API versions"
    for key, (ours_min, ours_max) in SUPPORTED_VERSIONS.items():
        name = ApiKey(key).name
        if key not in ranges:
            assert name not in chosen, f"{name}: chosen though the broker does not offer it"
            continue
        lo, hi = ranges[key]
        if ours_max < lo or hi < ours_min:
            assert name not in chosen, f"{name}: no common version, yet {chosen.get(name)} chosen"
            continue
        assert chosen[name] == min(ours_max, hi), (name, chosen[name], (lo, hi))
        assert chosen[name] >= lo, f"{name} v{chosen[name]} is below the broker minimum {lo}"


def test_versions_used_against_this_apache_kafka_line(broker: Any, make_client: Factory) -> None:
    if not broker.is_apache or not broker.version:
        pytest.skip(f"the table covers Apache Kafka started by the suite, not {broker.kind}")
    line = ".".join(broker.version.split(".")[:2])
    if line not in EXPECTED:
        pytest.skip(f"no table for Apache Kafka {line} (have {', '.join(EXPECTED)})")
    chosen, _ = _negotiated(make_client, broker.bootstrap_servers)
    expected = EXPECTED[line]
    wrong = {
        name: (chosen.get(name), want)
        for name, want in expected.items()
        if chosen.get(name) != want
    }
    assert not wrong, f"Apache Kafka {broker.version}: (chosen, table) differ for {wrong}"


def test_kafka_4_removed_versions_are_not_offered(broker: Any) -> None:
    # KIP-896: what 4.x no longer accepts, and which this client therefore must not pick.
    if not broker.is_apache or not broker.version.startswith("4."):
        pytest.skip("only Apache Kafka 4.x removed the old versions")
    ranges = broker.api_versions
    assert ranges[ApiKey.FETCH][0] >= 4
    assert ranges[ApiKey.LIST_OFFSETS][0] >= 1
    assert ranges[ApiKey.OFFSET_COMMIT][0] >= 2
    assert ranges[ApiKey.OFFSET_FETCH][0] >= 1
    assert ranges[ApiKey.OFFSET_FOR_LEADER_EPOCH][0] >= 2

"""The share-group heartbeat thread without a network: a member that joined without partitions
asks for its first assignment sooner than the heartbeat interval, for one interval at most."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kafkaconsumer.internals.group import share_heartbeat_request_manager as hb
from kafkaconsumer.internals.group.share_membership_manager import ShareMemberState

pytestmark = pytest.mark.timeout(30)


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def monotonic_ms(self) -> int:
        return self.now


class _Member:
    """What the heartbeat thread reads of its member when an answer arrives."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.condition = threading.Condition(self.lock)
        self.time = _Clock()
        self.heartbeat_interval_ms = 5000
        self.state = ShareMemberState.STABLE
        self.rebalance_config = type("Cfg", (), {"group_id": "g", "rebalance_timeout_ms": 1})()
        self.assigned = False

    def has_assignment(self) -> bool:
        return self.assigned

    def on_heartbeat_success(self, response: dict[str, Any]) -> None:
        self.assigned = bool(response.get("assignment"))


def test_a_member_without_partitions_asks_again_soon_for_one_interval() -> None:
    member = _Member()
    thread = hb.ShareHeartbeatRequestManager(member)  # type: ignore[arg-type]
    thread._on_response(0, {"error_code": 0})  # the join's answer: an epoch, no partitions
    assert thread._next_at == hb._FIRST_ASSIGNMENT_WAIT_MS
    member.time.now = 4000
    thread._on_response(1, {"error_code": 0})
    assert thread._next_at == 4000 + hb._FIRST_ASSIGNMENT_WAIT_MS
    member.time.now = 5000  # one interval after joining: the normal cadence again
    thread._on_response(1, {"error_code": 0})
    assert thread._next_at == 10_000


def test_a_member_given_partitions_heartbeats_at_the_interval() -> None:
    member = _Member()
    thread = hb.ShareHeartbeatRequestManager(member)  # type: ignore[arg-type]
    thread._on_response(0, {"error_code": 0})
    member.time.now = 300
    thread._on_response(1, {"error_code": 0, "assignment": {"topic_partitions": [1]}})
    assert thread._next_at == 5300

"""The assignor registry: short names, Java class names, instances, protocol selection."""

from __future__ import annotations

import pytest

from kafkaconsumer.internals.assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    common_protocol,
    get_assignor_class,
    resolve_assignors,
)

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    "name, cls",
    [
        ("range", RangeAssignor),
        ("roundrobin", RoundRobinAssignor),
        ("sticky", StickyAssignor),
        ("cooperative-sticky", CooperativeStickyAssignor),
        ("org.apache.kafka.clients.consumer.RangeAssignor", RangeAssignor),
        ("org.apache.kafka.clients.consumer.RoundRobinAssignor", RoundRobinAssignor),
        ("org.apache.kafka.clients.consumer.StickyAssignor", StickyAssignor),
        ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", CooperativeStickyAssignor),
        (" range ", RangeAssignor),
    ],
)
def test_names_resolve(name: str, cls: type) -> None:
    assert get_assignor_class(name) is cls


def test_class_names_match_registry_names() -> None:
    for name, cls in ASSIGNORS.items():
        assert cls().name == name


def test_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown partition assignor 'fancy'"):
        get_assignor_class("fancy")


def test_resolve_java_default_list_string() -> None:
    got = resolve_assignors(
        "org.apache.kafka.clients.consumer.RangeAssignor,"
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    )
    assert [a.name for a in got] == ["range", "cooperative-sticky"]
    assert common_protocol(got) is RebalanceProtocol.EAGER


def test_resolve_mixed_list_gives_fresh_instances() -> None:
    mine = StickyAssignor()
    got = resolve_assignors(["cooperative-sticky", RoundRobinAssignor, mine])
    assert [a.name for a in got] == ["cooperative-sticky", "roundrobin", "sticky"]
    assert got[2] is mine
    assert resolve_assignors("sticky")[0] is not resolve_assignors("sticky")[0]


def test_resolve_rejects_bad_values() -> None:
    with pytest.raises(ValueError):
        resolve_assignors([])
    with pytest.raises(ValueError):
        resolve_assignors("range,range")
    with pytest.raises(TypeError):
        resolve_assignors([42])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        resolve_assignors([dict])


def test_common_protocol() -> None:
    assert common_protocol([CooperativeStickyAssignor()]) is RebalanceProtocol.COOPERATIVE
    assert common_protocol([RangeAssignor()]) is RebalanceProtocol.EAGER

    class CoopOnly(CooperativeStickyAssignor):
        @property
        def supported_protocols(self) -> list[RebalanceProtocol]:
            return [RebalanceProtocol.COOPERATIVE]

    with pytest.raises(ValueError):
        common_protocol([CoopOnly(), RangeAssignor()])

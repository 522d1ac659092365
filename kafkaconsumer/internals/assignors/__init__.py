"""Partition assignors and the registry that resolves ``partition.assignment.strategy`` values.

``partition.assignment.strategy`` accepts short names (``range``, ``roundrobin``, ``sticky``,
``cooperative-sticky``), the Java class names (``org.apache.kafka.clients.consumer.RangeAssignor``
...), assignor classes, or assignor instances. :func:`resolve_assignors` turns a config value
(a list, or a comma-separated string) into fresh instances, one per consumer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kafkaconsumer.config.porting import kafka_python_assignor
from kafkaconsumer.internals.assignors.abstract import (
    AbstractPartitionAssignor,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
)
from kafkaconsumer.internals.assignors.cooperative_sticky import (
    CooperativeStickyAssignor,
    adjust_for_cooperative,
    validate_cooperative_assignment,
)
from kafkaconsumer.internals.assignors.range import RangeAssignor
from kafkaconsumer.internals.assignors.roundrobin import RoundRobinAssignor
from kafkaconsumer.internals.assignors.sticky import StickyAssignor

logger = logging.getLogger(__name__)

__all__ = [
    "ConsumerPartitionAssignor",
    "AbstractPartitionAssignor",
    "RebalanceProtocol",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "CooperativeStickyAssignor",
    "ASSIGNORS",
    "get_assignor_class",
    "resolve_assignors",
    "common_protocol",
    "adjust_for_cooperative",
    "validate_cooperative_assignment",
]

_JAVA_PACKAGE = "org.apache.kafka.clients.consumer."

#: Short name -> class.
ASSIGNORS: dict[str, type[ConsumerPartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}

_ALIASES: dict[str, str] = {
    _JAVA_PACKAGE + "RangeAssignor": "range",
    _JAVA_PACKAGE + "RoundRobinAssignor": "roundrobin",
    _JAVA_PACKAGE + "StickyAssignor": "sticky",
    _JAVA_PACKAGE + "CooperativeStickyAssignor": "cooperative-sticky",
    # Our own class names, for symmetry with the Java spelling.
    "RangeAssignor": "range",
    "RoundRobinAssignor": "roundrobin",
    "StickyAssignor": "sticky",
    "CooperativeStickyAssignor": "cooperative-sticky",
}

#: What one entry of ``partition.assignment.strategy`` may be.
AssignorSpec = str | type | ConsumerPartitionAssignor


def get_assignor_class(name: str) -> type[ConsumerPartitionAssignor]:
    """The assignor class for a short name or Java class name (ValueError when unknown)."""
    if not isinstance(name, str):
        raise TypeError(f"assignor name must be str, got {type(name).__name__}")
    key = name.strip()
    key = _ALIASES.get(key, key)
    try:
        return ASSIGNORS[key]
    except KeyError:
        ported = kafka_python_assignor(key)
        if ported is not None:
            raise ValueError(ported) from None
        known = sorted(ASSIGNORS) + sorted(k for k in _ALIASES if k.startswith(_JAVA_PACKAGE))
        raise ValueError(
            f"unknown partition assignor {name!r}; known: {', '.join(known)}"
        ) from None


def resolve_assignors(
    spec: AssignorSpec | Iterable[AssignorSpec],
) -> list[ConsumerPartitionAssignor]:
    """Instances for a ``partition.assignment.strategy`` value, in preference order.

    Accepts a comma-separated string, or a list of names, classes and instances. Duplicate
    names and an empty list raise ValueError.
    """
    items: list[AssignorSpec]
    if isinstance(spec, str):
        items = [s for s in (p.strip() for p in spec.split(",")) if s]
    elif isinstance(spec, (ConsumerPartitionAssignor, type)):
        items = [spec]
    else:
        items = list(spec)
    out: list[ConsumerPartitionAssignor] = []
    for item in items:
        if isinstance(item, ConsumerPartitionAssignor):
            out.append(item)
        elif isinstance(item, type):
            if not issubclass(item, ConsumerPartitionAssignor):
                raise TypeError(
                    kafka_python_assignor(item)
                    or f"{item.__name__} is not a ConsumerPartitionAssignor"
                )
            out.append(item())
        elif isinstance(item, str):
            out.extend(resolve_assignors(item) if "," in item else [get_assignor_class(item)()])
        else:
            raise TypeError(f"cannot use {item!r} as a partition assignor")
    if not out:
        raise ValueError("partition.assignment.strategy must name at least one assignor")
    names = [a.name for a in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"partition.assignment.strategy names an assignor twice: {dupes}")
    return out


def common_protocol(assignors: Iterable[ConsumerPartitionAssignor]) -> RebalanceProtocol:
    """The rebalance protocol a consumer uses: the highest one every configured assignor supports.

    Java's rule: COOPERATIVE only when all assignors support it, else EAGER; no common protocol
    raises ValueError.
    """
    common: set[RebalanceProtocol] | None = None
    for a in assignors:
        supported = set(a.supported_protocols)
        common = supported if common is None else common & supported
    if not common:
        raise ValueError("the configured assignors support no common rebalance protocol")
    return max(common)

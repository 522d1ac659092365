"""Share-group administration (KIP-932) for :class:`kafkaconsumer.admin.KafkaAdminClient`.

The methods of Java's ``Admin`` for share groups, in snake_case: describe share groups (state,
epochs, members and their assignments), list their share-partition start offsets and lag, alter
or reset those offsets (the group must be empty), delete them per topic, delete share groups,
and set group configurations such as ``share.auto.offset.reset`` with
IncrementalAlterConfigs. Requests go to the group's coordinator, configurations to any broker.

:class:`ShareGroupAdmin` is a mixin of ``KafkaAdminClient``; it uses the client's plumbing
(:class:`~kafkaconsumer.admin_plumbing.AdminPlumbing`) and adds no state of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from kafkaconsumer.admin_plumbing import _GROUP_ID_NOT_FOUND, AdminPlumbing, _Deadline, _partitions
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition

__all__ = [
    "ShareGroupAdmin",
    "ShareGroupDescription",
    "ShareMemberDescription",
    "SharePartitionOffsetInfo",
    "GROUP_RESOURCE",
]

#: The IncrementalAlterConfigs / DescribeConfigs resource type of a group.
GROUP_RESOURCE = 32
#: Config resource types by name; ``client-metrics`` names a client metrics subscription
#: (KIP-714: its ``metrics``, ``interval.ms`` and ``match`` keys).
_RESOURCE_TYPES = {"topic": 2, "broker": 4, "group": GROUP_RESOURCE, "client-metrics": 16}
_CONFIG_OPERATIONS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}


@dataclass(frozen=True)
class ShareMemberDescription:
    """One member of a described share group (Java ``ShareMemberDescription``)."""

    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()
    member_epoch: int = 0
    rack_id: str | None = None
    subscribed_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShareGroupDescription:
    """A share group's state, epochs and members (Java ``ShareGroupDescription``).

    ``state`` is ``Empty``, ``Stable`` or ``Dead`` (no such group); ``assignor`` is the
    broker's share-group assignor.
    """

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMemberDescription, ...] = field(default_factory=tuple)
    coordinator: int = -1


@dataclass(frozen=True)
class SharePartitionOffsetInfo:
    """A share group's position in one partition (Java ``SharePartitionOffsetInfo``):
    ``start_offset`` is the share-partition start offset (records before it are all settled),
    ``lag`` the records from it to the end (None when the broker does not say)."""

    start_offset: int
    leader_epoch: int | None = None
    lag: int | None = None


class _AdminPlumbing(AdminPlumbing, Protocol):
    """What the mixin needs of ``KafkaAdminClient``: the shared plumbing, the consumer-group
    calls it builds on and ``list_offsets``.

    Thread-safety: the admin client's.
    """

    def list_groups(self, *, timeout_ms: float | timedelta | None = None) -> list[Any]: ...

    def delete_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: float | timedelta | None = None
    ) -> None: ...

    def list_offsets(
        self,
        specs: Mapping[TopicPartition, int],
        *,
        timeout_ms: float | timedelta | None = None,
        read_committed: bool = False,
    ) -> dict[TopicPartition, Any]: ...


class ShareGroupAdmin:
    """Share-group administration, mixed into ``KafkaAdminClient``.

    Thread-safety: the admin client's (one lock serialises its calls).
    """

    def list_share_groups(
        self: _AdminPlumbing, *, timeout_ms: float | timedelta | None = None
    ) -> list[Any]:
        """Every share group of the cluster (``GroupListing`` with type ``"share"``)."""
        return [g for g in self.list_groups(timeout_ms=timeout_ms) if g.type == "share"]

    def describe_share_groups(
        self: _AdminPlumbing,
        group_ids: Iterable[str],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> dict[str, ShareGroupDescription]:
        """State, epochs and members of each share group; a group that does not exist is
        described with state ``Dead`` (as Java does), a group of another type raises."""
        groups = [str(g) for g in group_ids]
        done: dict[str, ShareGroupDescription] = {}

        def attempt(deadline: _Deadline) -> dict[str, ShareGroupDescription]:
            for group in groups:
                if group in done:
                    continue
                node = self._coordinator(group, deadline)
                resp = self._request(
                    node,
                    ApiKey.SHARE_GROUP_DESCRIBE,
                    {"group_ids": [group], "include_authorized_operations": False},
                    deadline,
                )
                for g in resp.get("groups") or []:
                    code = int(g.get("error_code", 0))
                    if code == _GROUP_ID_NOT_FOUND and "not a share group" not in str(
                        g.get("error_message") or ""
                    ):
                        done[group] = ShareGroupDescription(group, "Dead", -1, -1, "", (), node)
                        continue
                    if code:
                        self._raise(code, g.get("error_message"), group_id=group)
                    members = tuple(
                        ShareMemberDescription(
                            m["member_id"],
                            m.get("client_id", ""),
                            m.get("client_host", ""),
                            _partitions(m.get("assignment")),
                            int(m.get("member_epoch", 0)),
                            m.get("rack_id"),
                            tuple(m.get("subscribed_topic_names") or ()),
                        )
                        for m in g.get("members") or []
                    )
                    done[group] = ShareGroupDescription(
                        g["group_id"],
                        g.get("group_state", ""),
                        int(g.get("group_epoch", -1)),
                        int(g.get("assignment_epoch", -1)),
                        g.get("assignor_name", ""),
                        members,
                        node,
                    )
            return {g: done[g] for g in groups if g in done}

        return self._call("describe_share_groups", timeout_ms, attempt)

    def list_share_group_offsets(
        self: _AdminPlumbing,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        """The share group's start offset (and lag, Kafka 4.2+) per partition: every partition
        it has state for, or the given ones; partitions without a start offset are left out."""
        topics: list[dict[str, Any]] | None = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                by_topic.setdefault(tp[0], []).append(int(tp[1]))
            topics = [{"topic_name": t, "partitions": sorted(p)} for t, p in by_topic.items()]

        def attempt(deadline: _Deadline) -> dict[TopicPartition, SharePartitionOffsetInfo]:
            node = self._coordinator(group_id, deadline)
            resp = self._request(
                node,
                ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                {"groups": [{"group_id": group_id, "topics": topics}]},
                deadline,
            )
            out: dict[TopicPartition, SharePartitionOffsetInfo] = {}
            for g in resp.get("groups") or []:
                code = int(g.get("error_code", 0))
                if code:
                    self._raise(code, g.get("error_message"), group_id=group_id)
                for t in g.get("topics") or []:
                    for p in t.get("partitions") or []:
                        tp = TopicPartition(t["topic_name"], int(p["partition_index"]))
                        code = int(p.get("error_code", 0))
                        if code:
                            self._raise(
                                code,
                                p.get("error_message"),
                                group_id=group_id,
                                topic=tp.topic,
                                partition=tp.partition,
                            )
                        start = int(p.get("start_offset", -1))
                        if start < 0:
                            continue
                        epoch = int(p.get("leader_epoch", -1))
                        lag = int(p.get("lag", -1))
                        out[tp] = SharePartitionOffsetInfo(
                            start, epoch if epoch >= 0 else None, lag if lag >= 0 else None
                        )
            return out

        return self._call("list_share_group_offsets", timeout_ms, attempt)

    def alter_share_group_offsets(
        self: _AdminPlumbing,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> None:
        """Set the share group's start offset of each partition (the group must have no
        members: ``NonEmptyGroupError`` otherwise)."""
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp[0], []).append(
                {"partition_index": int(tp[1]), "start_offset": int(offset)}
            )
        body = {
            "group_id": group_id,
            "topics": [{"topic_name": t, "partitions": p} for t, p in by_topic.items()],
        }

        def attempt(deadline: _Deadline) -> None:
            node = self._coordinator(group_id, deadline)
            resp = self._request(node, ApiKey.ALTER_SHARE_GROUP_OFFSETS, body, deadline)
            code = int(resp.get("error_code", 0))
            if code:
                self._raise(code, resp.get("error_message"), group_id=group_id)
            for t in resp.get("responses") or []:
                for p in t.get("partitions") or []:
                    code = int(p.get("error_code", 0))
                    if code:
                        self._raise(
                            code,
                            p.get("error_message"),
                            group_id=group_id,
                            topic=t["topic_name"],
                            partition=int(p["partition_index"]),
                        )

        self._call("alter_share_group_offsets", timeout_ms, attempt)

    def reset_share_group_offsets(
        self: _AdminPlumbing,
        group_id: str,
        partitions: Iterable[TopicPartition],
        spec: int,
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> dict[TopicPartition, int]:
        """Move the share group's start offset of ``partitions`` to ``spec``: ``EARLIEST``
        (-2), ``LATEST`` (-1) or a timestamp in ms (the first offset at or after it; the end
        of the log when there is none). Returns the offsets set."""
        tps = [TopicPartition(*tp) for tp in partitions]
        found = self.list_offsets({tp: spec for tp in tps}, timeout_ms=timeout_ms)
        targets: dict[TopicPartition, int] = {}
        missing = []
        for tp in tps:
            offset = found[tp].offset
            if offset < 0:
                missing.append(tp)
            else:
                targets[tp] = offset
        if missing:
            ends = self.list_offsets({tp: -1 for tp in missing}, timeout_ms=timeout_ms)
            targets.update({tp: ends[tp].offset for tp in missing})
        ShareGroupAdmin.alter_share_group_offsets(self, group_id, targets, timeout_ms=timeout_ms)
        return targets

    def delete_share_group_offsets(
        self: _AdminPlumbing,
        group_id: str,
        topics: Iterable[str],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> None:
        """Forget the share group's state for whole ``topics`` (the group must be empty)."""
        body = {"group_id": group_id, "topics": [{"topic_name": t} for t in topics]}

        def attempt(deadline: _Deadline) -> None:
            node = self._coordinator(group_id, deadline)
            resp = self._request(node, ApiKey.DELETE_SHARE_GROUP_OFFSETS, body, deadline)
            code = int(resp.get("error_code", 0))
            if code:
                self._raise(code, resp.get("error_message"), group_id=group_id)
            for t in resp.get("responses") or []:
                code = int(t.get("error_code", 0))
                if code:
                    self._raise(
                        code, t.get("error_message"), group_id=group_id, topic=t["topic_name"]
                    )

        self._call("delete_share_group_offsets", timeout_ms, attempt)

    def delete_share_groups(
        self: _AdminPlumbing,
        group_ids: Iterable[str],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> None:
        """Delete empty share groups and their state (DeleteGroups, as for any group)."""
        self.delete_consumer_groups(group_ids, timeout_ms=timeout_ms)

    def incremental_alter_configs(
        self: _AdminPlumbing,
        configs: Mapping[Any, Mapping[str, str | None]],
        *,
        timeout_ms: float | timedelta | None = None,
        validate_only: bool = False,
    ) -> None:
        """Set (or, for a None value, delete) single configuration keys of resources:
        ``{ConfigResource("group", "jobs"): {"share.auto.offset.reset": "earliest"}}``, or a
        client metrics subscription: ``{ConfigResource("client-metrics", "sub"): {"metrics":
        "org.apache.kafka.consumer.", "interval.ms": "1000"}}``. Broker resources go to that
        broker, the others to any broker."""
        resources = []
        for resource, entries in configs.items():
            kind, name = str(resource[0]), str(resource[1])
            if kind not in _RESOURCE_TYPES:
                raise ValueError(
                    f"unknown resource type {kind!r} (expected one of {sorted(_RESOURCE_TYPES)})"
                )
            resources.append(
                (
                    kind,
                    name,
                    {
                        "resource_type": _RESOURCE_TYPES[kind],
                        "resource_name": name,
                        "configs": [
                            {
                                "name": key,
                                "config_operation": _CONFIG_OPERATIONS[
                                    "delete" if value is None else "set"
                                ],
                                "value": value,
                            }
                            for key, value in entries.items()
                        ],
                    },
                )
            )

        def attempt(deadline: _Deadline) -> None:
            by_node: dict[int, list[dict[str, Any]]] = {}
            for kind, name, res in resources:
                node = int(name) if kind == "broker" else self._any_node(deadline)
                by_node.setdefault(node, []).append(res)
            for node, items in by_node.items():
                resp = self._request(
                    node,
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    {"resources": items, "validate_only": validate_only},
                    deadline,
                )
                for r in resp.get("responses") or []:
                    code = int(r.get("error_code", 0))
                    if code:
                        self._raise(code, r.get("error_message"), resource=r["resource_name"])

        self._call("incremental_alter_configs", timeout_ms, attempt)

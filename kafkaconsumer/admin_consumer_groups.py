"""Consumer-group administration for :class:`kafkaconsumer.admin.KafkaAdminClient`.

The consumer-group methods of Java's ``Admin``, in snake_case: list the groups of every broker,
describe groups (ConsumerGroupDescribe first where the coordinator has it, for KIP-848 groups,
and DescribeGroups for classic groups, as the Java client does), list, alter and delete a
group's committed offsets, and delete groups. Group requests go to the group's coordinator
(found with FindCoordinator), ``list_groups`` to every broker.

:class:`ConsumerGroupAdmin` is a mixin of ``KafkaAdminClient``; it uses the client's plumbing
(:class:`~kafkaconsumer.admin_plumbing.AdminPlumbing`) and adds no state of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kafkaconsumer.admin_plumbing import (
    _GROUP_ID_NOT_FOUND,
    _UNSUPPORTED_VERSION,
    AdminPlumbing,
    _Deadline,
    _partitions,
    _raise_error,
)
from kafkaconsumer.errors import UnsupportedVersionError
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        ConsumerGroupDescribeResponse,
        DeleteGroupsResponse,
        DescribeGroupsResponse,
        ListGroupsResponse,
        OffsetCommitResponse,
        OffsetDeleteResponse,
        OffsetFetchResponse,
    )

logger = logging.getLogger(__name__)

__all__ = ["ConsumerGroupAdmin", "GroupListing", "GroupDescription", "MemberDescription"]


class GroupListing(NamedTuple):
    """One group as ``list_groups`` reports it; ``type`` is ``"classic"``, ``"consumer"``
    (KIP-848), ... where the broker says (ListGroups v5+), else None."""

    group_id: str
    protocol_type: str
    state: str | None = None
    type: str | None = None


@dataclass(frozen=True)
class MemberDescription:
    """One member of a described group; ``assignment`` is decoded for consumer groups.

    For a consumer-protocol (KIP-848) group, ``target_assignment`` is what the coordinator
    is moving the member to and ``member_epoch`` its epoch; both are empty/None for classic
    groups.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()
    target_assignment: tuple[TopicPartition, ...] = ()
    member_epoch: int | None = None


@dataclass(frozen=True)
class GroupDescription:
    """A group's state, protocol and members (``describe_groups``).

    ``type`` is ``"classic"`` or ``"consumer"`` (KIP-848); for a consumer group ``protocol``
    is the server-side assignor and ``group_epoch`` the group's epoch.
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = field(default_factory=tuple)
    coordinator: int = -1
    type: str = "classic"
    group_epoch: int | None = None


class _AdminPlumbing(AdminPlumbing, Protocol):
    """What the mixin needs of ``KafkaAdminClient``: the shared plumbing and the mixin's own
    helpers, called through the client.

    Thread-safety: the admin client's.
    """

    def _describe_consumer_group(
        self, node: int, group: str, deadline: _Deadline
    ) -> GroupDescription | None: ...

    @staticmethod
    def _description(g: Mapping[str, Any], node: int) -> GroupDescription: ...


class ConsumerGroupAdmin:
    """Consumer-group administration, mixed into ``KafkaAdminClient``.

    Thread-safety: the admin client's (one lock serialises its calls).
    """

    def list_groups(
        self: _AdminPlumbing, *, timeout_ms: float | timedelta | None = None
    ) -> list[GroupListing]:
        """Every group of every broker."""

        def attempt(deadline: _Deadline) -> list[GroupListing]:
            brokers = self._broker_ids()
            found: dict[str, GroupListing] = {}
            for node in brokers:
                resp: ListGroupsResponse = self._request(
                    node, ApiKey.LIST_GROUPS, {"states_filter": [], "types_filter": []}, deadline
                )
                code = int(resp.get("error_code", 0))
                if code:
                    _raise_error(code, None, broker=node)
                for g in resp.get("groups") or []:
                    found[g["group_id"]] = GroupListing(
                        g["group_id"],
                        g.get("protocol_type", ""),
                        g.get("group_state") or None,
                        g.get("group_type") or None,
                    )
            return sorted(found.values())

        return self._call("list_groups", timeout_ms, attempt)

    def describe_groups(
        self: _AdminPlumbing,
        group_ids: Iterable[str],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> dict[str, GroupDescription]:
        """State, protocol and members of each group (a missing group has state ``Dead``).

        Consumer-protocol (KIP-848) groups are described with ConsumerGroupDescribe where the
        coordinator supports it, classic groups with DescribeGroups.
        """
        groups = [str(g) for g in group_ids]
        done: dict[str, GroupDescription] = {}

        def attempt(deadline: _Deadline) -> dict[str, GroupDescription]:
            for group in groups:
                if group in done:
                    continue
                node = self._coordinator(group, deadline)
                described = self._describe_consumer_group(node, group, deadline)
                if described is not None:
                    done[group] = described
                    continue
                resp: DescribeGroupsResponse = self._request(
                    node,
                    ApiKey.DESCRIBE_GROUPS,
                    {"groups": [group], "include_authorized_operations": False},
                    deadline,
                )
                for g in resp.get("groups") or []:
                    code = int(g.get("error_code", 0))
                    if code:
                        _raise_error(code, None, group_id=g.get("group_id", group))
                    done[g["group_id"]] = self._description(g, node)
            return {g: done[g] for g in groups if g in done}

        return self._call("describe_groups", timeout_ms, attempt)

    def _describe_consumer_group(
        self: _AdminPlumbing, node: int, group: str, deadline: _Deadline
    ) -> GroupDescription | None:
        """The group as ConsumerGroupDescribe sees it; None when it is not a consumer-protocol
        group (or the broker predates KIP-848), so that DescribeGroups should be asked."""
        if self._api_version(node, ApiKey.CONSUMER_GROUP_DESCRIBE, deadline) is None:
            return None
        resp: ConsumerGroupDescribeResponse = self._request(
            node,
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            {"group_ids": [group], "include_authorized_operations": False},
            deadline,
        )
        for g in resp.get("groups") or []:
            code = int(g.get("error_code", 0))
            if code == _GROUP_ID_NOT_FOUND:
                return None  # a classic group, or none at all: DescribeGroups says which
            if code == _UNSUPPORTED_VERSION:
                # Kafka 3.x advertises the API but answers this while the consumer protocol is
                # not enabled there; Java's admin falls back to DescribeGroups as well.
                return None
            if code:
                _raise_error(code, g.get("error_message"), group_id=g.get("group_id", group))

            members = tuple(
                MemberDescription(
                    m["member_id"],
                    m.get("instance_id"),
                    m.get("client_id", ""),
                    m.get("client_host", ""),
                    _partitions(m.get("assignment")),
                    _partitions(m.get("target_assignment")),
                    int(m.get("member_epoch", 0)),
                )
                for m in g.get("members") or []
            )
            return GroupDescription(
                g["group_id"],
                g.get("group_state", ""),
                "consumer",
                g.get("assignor_name", ""),
                members,
                node,
                "consumer",
                int(g.get("group_epoch", 0)),
            )
        return None

    @staticmethod
    def _description(g: Mapping[str, Any], node: int) -> GroupDescription:
        members = []
        for m in g.get("members") or []:
            assignment: tuple[TopicPartition, ...] = ()
            raw = m.get("member_assignment")
            if g.get("protocol_type") == "consumer" and raw:
                try:
                    from kafkaconsumer.internals.consumer_protocol import decode_assignment

                    assignment = tuple(decode_assignment(bytes(raw)).partitions)
                except Exception:  # noqa: BLE001 - a foreign assignment format is not an error
                    logger.debug("cannot decode the assignment of %s", m.get("member_id"))
            members.append(
                MemberDescription(
                    m["member_id"],
                    m.get("group_instance_id"),
                    m.get("client_id", ""),
                    m.get("client_host", ""),
                    assignment,
                )
            )
        return GroupDescription(
            g["group_id"],
            g.get("group_state", ""),
            g.get("protocol_type", ""),
            g.get("protocol_data", ""),
            tuple(members),
            node,
        )

    def list_consumer_group_offsets(
        self: _AdminPlumbing,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: float | timedelta | None = None,
        require_stable: bool = False,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (all partitions, or the given ones); partitions
        without a committed offset are left out."""
        tps = None if partitions is None else [TopicPartition(*tp) for tp in partitions]
        topics: list[dict[str, Any]] | None = None
        if tps is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]

        def attempt(deadline: _Deadline) -> dict[TopicPartition, OffsetAndMetadata]:
            node = self._coordinator(group_id, deadline)

            def body(version: int) -> dict[str, Any]:
                if version >= 8:
                    return {
                        "groups": [{"group_id": group_id, "topics": topics}],
                        "require_stable": require_stable,
                    }
                if topics is None and version < 2:
                    raise UnsupportedVersionError(
                        "listing every committed offset needs OffsetFetch v2+; name the partitions"
                    )
                return {"group_id": group_id, "topics": topics, "require_stable": require_stable}

            resp: OffsetFetchResponse = self._request(node, ApiKey.OFFSET_FETCH, body, deadline)
            groups = resp.get("groups") or []
            if groups:
                entry = groups[0]
                code = int(entry.get("error_code", 0))
                topic_list = entry.get("topics") or []
            else:
                code = int(resp.get("error_code", 0))
                topic_list = resp.get("topics") or []
            if code:
                _raise_error(code, None, group_id=group_id)
            out: dict[TopicPartition, OffsetAndMetadata] = {}
            for t in topic_list:
                for p in t.get("partitions") or []:
                    tp = TopicPartition(t["name"], int(p["partition_index"]))
                    pcode = int(p.get("error_code", 0))
                    if pcode:
                        _raise_error(
                            pcode, None, group_id=group_id, topic=tp.topic, partition=tp.partition
                        )
                    offset = int(p.get("committed_offset", -1))
                    if offset < 0:
                        continue
                    epoch = int(p.get("committed_leader_epoch", -1))
                    out[tp] = OffsetAndMetadata(
                        offset, p.get("metadata") or "", epoch if epoch >= 0 else None
                    )
            return out

        return self._call("list_consumer_group_offsets", timeout_ms, attempt)

    def alter_consumer_group_offsets(
        self: _AdminPlumbing,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> None:
        """Set a group's committed offsets (the group must have no active members, as in
        Java; a live group answers ``UnknownMemberIdError``)."""
        normal: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, om in offsets.items():
            normal[TopicPartition(*tp)] = (
                om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om))
            )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, om in normal.items():
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": om.offset,
                    "committed_leader_epoch": -1 if om.leader_epoch is None else om.leader_epoch,
                    "committed_metadata": om.metadata,
                }
            )

        def attempt(deadline: _Deadline) -> None:
            node = self._coordinator(group_id, deadline)
            body = {
                "group_id": group_id,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
            }
            resp: OffsetCommitResponse = self._request(node, ApiKey.OFFSET_COMMIT, body, deadline)
            for t in resp.get("topics") or []:
                for p in t.get("partitions") or []:
                    code = int(p.get("error_code", 0))
                    if code:
                        _raise_error(
                            code,
                            None,
                            group_id=group_id,
                            topic=t["name"],
                            partition=int(p["partition_index"]),
                        )

        self._call("alter_consumer_group_offsets", timeout_ms, attempt)

    def delete_consumer_groups(
        self: _AdminPlumbing,
        group_ids: Iterable[str],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> None:
        """Delete empty groups and their offsets (``NonEmptyGroupError`` for a live one,
        ``GroupIdNotFoundError`` for an unknown one)."""
        pending = [str(g) for g in group_ids]

        def attempt(deadline: _Deadline) -> None:
            for group in list(pending):
                node = self._coordinator(group, deadline)
                resp: DeleteGroupsResponse = self._request(
                    node, ApiKey.DELETE_GROUPS, {"groups_names": [group]}, deadline
                )
                for r in resp.get("results") or []:
                    code = int(r.get("error_code", 0))
                    if code:
                        _raise_error(code, None, group_id=r.get("group_id", group))
                pending.remove(group)

        self._call("delete_consumer_groups", timeout_ms, attempt)

    def delete_consumer_group_offsets(
        self: _AdminPlumbing,
        group_id: str,
        partitions: Iterable[TopicPartition],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> None:
        """Delete a group's committed offsets for the given partitions (OffsetDelete). Refused
        with ``GroupSubscribedToTopicError`` for a topic the live group consumes."""
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp in partitions:
            tp = TopicPartition(*tp)
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition})

        def attempt(deadline: _Deadline) -> None:
            node = self._coordinator(group_id, deadline)
            resp: OffsetDeleteResponse = self._request(
                node,
                ApiKey.OFFSET_DELETE,
                {
                    "group_id": group_id,
                    "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
                },
                deadline,
            )
            code = int(resp.get("error_code", 0))
            if code:
                _raise_error(code, None, group_id=group_id)
            for t in resp.get("topics") or []:
                for p in t.get("partitions") or []:
                    pcode = int(p.get("error_code", 0))
                    if pcode:
                        _raise_error(
                            pcode,
                            None,
                            group_id=group_id,
                            topic=t["name"],
                            partition=int(p["partition_index"]),
                        )

        self._call("delete_consumer_group_offsets", timeout_ms, attempt)

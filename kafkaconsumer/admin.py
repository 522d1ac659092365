"""A small, real admin client: topics, partitions, records and consumer groups.

Each call is blocking and honours its ``timeout_ms`` (default ``default.api.timeout.ms``); on
failure it raises the broker's error class (``TopicAlreadyExistsError``,
``GroupIdNotFoundError``, ...) with the object it concerns in the message and as an attribute
(``topic=``, ``group_id=``, ``partition=``). Retriable conditions (a coordinator or controller
that moved, a lost connection, a group still loading) are retried within the timeout.

Routing follows the Java ``KafkaAdminClient``: topic operations go to the controller (any
broker when the cluster does not say), group operations to the group's coordinator (found with
FindCoordinator), ``delete_records`` and ``list_offsets`` to each partition's leader,
``list_groups`` to every broker, ``describe_configs`` of a broker to that broker and of a topic
to any broker.

Consumer groups are administered by the methods of
:class:`~kafkaconsumer.admin_consumer_groups.ConsumerGroupAdmin` and share groups (KIP-932) by
those of :class:`~kafkaconsumer.admin_share_groups.ShareGroupAdmin`, mixins of this client that
build on its plumbing (:mod:`kafkaconsumer.admin_plumbing`). Their value types are importable
from here as well.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from kafkaconsumer.admin_consumer_groups import (
    ConsumerGroupAdmin,
    GroupDescription,
    GroupListing,
    MemberDescription,
)
from kafkaconsumer.admin_plumbing import _Deadline, _error, _raise_error, _Retry
from kafkaconsumer.admin_share_groups import (
    ShareGroupAdmin,
    ShareGroupDescription,
    ShareMemberDescription,
    SharePartitionOffsetInfo,
)
from kafkaconsumer.config import AdminClientConfig
from kafkaconsumer.errors import (
    BrokerResponseError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NodeNotReadyError,
    UnsupportedVersionError,
)
from kafkaconsumer.metadata import Metadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.settings import NetworkSettings
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.timer import to_timeout_ms

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        CreatePartitionsResponse,
        CreateTopicsResponse,
        DeleteRecordsResponse,
        DeleteTopicsResponse,
        DescribeConfigsResponse,
        FindCoordinatorResponse,
        FindCoordinatorResponseCoordinator,
        ListOffsetsResponse,
        MetadataResponse,
    )

#: The result type of one admin call.
_R = TypeVar("_R")

__all__ = [
    "KafkaAdminClient",
    "GroupListing",
    "GroupDescription",
    "MemberDescription",
    "ListOffsetsResult",
    "TopicDescription",
    "PartitionDescription",
    "ConfigResource",
    "ConfigEntry",
    "ShareGroupDescription",
    "ShareMemberDescription",
    "SharePartitionOffsetInfo",
    "EARLIEST",
    "LATEST",
]

#: ``list_offsets`` specs: the log start offset and the high watermark.
EARLIEST = -2
LATEST = -1

_POLL_SLICE_MS = 100
_UNKNOWN_TOPIC_OR_PARTITION = 3

#: DescribeConfigs resource types by name, and the names of the config sources.
_RESOURCE_TYPES = {"topic": 2, "broker": 4}
_CONFIG_SOURCES = {
    -1: "UNKNOWN",
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}


@dataclass(frozen=True)
class PartitionDescription:
    """One partition of a described topic: its leader, replicas, in-sync replicas (broker
    ids; leader -1 when there is none) and offline replicas."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    leader_epoch: int | None = None


@dataclass(frozen=True)
class TopicDescription:
    """A topic as ``describe_topics`` reports it."""

    name: str
    topic_id: str | None
    internal: bool
    partitions: tuple[PartitionDescription, ...]


class ConfigResource(NamedTuple):
    """What ``describe_configs`` describes: ``ConfigResource("topic", "orders")`` or
    ``ConfigResource("broker", "1")``."""

    type: str
    name: str


@dataclass(frozen=True)
class ConfigEntry:
    """One configuration value; ``value`` is None for a sensitive one. ``source`` is the
    Java ``ConfigEntry.ConfigSource`` name (``DYNAMIC_TOPIC_CONFIG``, ``DEFAULT_CONFIG``,
    ...)."""

    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool

    @property
    def is_default(self) -> bool:
        """True when the value is the broker's built-in default."""
        return self.source == "DEFAULT_CONFIG"


class ListOffsetsResult(NamedTuple):
    """The answer of ``list_offsets`` for one partition."""

    offset: int
    timestamp: int
    leader_epoch: int | None


class KafkaAdminClient(ConsumerGroupAdmin, ShareGroupAdmin):
    """Blocking administration of topics, records, consumer groups and share groups.

    ``KafkaAdminClient({"bootstrap.servers": "localhost:9092"})``; every AdminClientConfig key
    is accepted (Java names or snake_case). Use it as a context manager or call :meth:`close`.

    Thread-safety: thread-safe; one lock serialises the calls.
    """

    def __init__(
        self, configs: Mapping[str, Any] | None = None, *, time: Time | None = None, **kwargs: Any
    ) -> None:
        """Connect lazily to the cluster named by ``bootstrap.servers`` (Java keys in ``configs`` or
        snake_case ``kwargs``); ``time`` replaces the monotonic clock in tests.
        """
        self.config = AdminClientConfig(configs, **kwargs)
        self._time = time or SYSTEM_TIME
        self._metadata = Metadata(self.config, time=self._time)
        # Admin metadata covers brokers and the controller; topic lists are asked for per call.
        self._metadata.set_topics([])
        self._network = NetworkClient(
            NetworkSettings.from_config(self.config), time=self._time, metadata=self._metadata
        )
        self._client = ConsumerNetworkClient(self._network, self._metadata)
        self._default_timeout = int(self.config["default.api.timeout.ms"])
        self._backoff_ms = int(self.config["retry.backoff.ms"])
        self._lock = threading.RLock()
        self._closed = False

    # ------------------------------------------------------------------ plumbing --------------
    #: Raise the broker error for a code (retriable ones wrapped to be retried), for the mixins.
    _raise = staticmethod(_raise_error)

    def _ensure_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the admin client is closed")

    def _ensure_metadata(self, deadline: _Deadline) -> None:
        if self._metadata.update_version > 0:
            return
        while self._metadata.update_version == 0:
            remaining = deadline.remaining()
            if remaining <= 0:
                last = self._metadata.last_error
                note = str(last) if last is not None else self._network.connection_errors()
                raise KafkaTimeoutError(
                    f"no cluster metadata within {deadline.budget:.0f} ms"
                    + (f" (last error: {note})" if note else "")
                )
            self._client.poll(min(remaining, _POLL_SLICE_MS), disable_wakeup=True)

    def _any_node(self, deadline: _Deadline) -> int:
        while True:
            node = self._client.least_loaded_node()
            if node is not None:
                return node
            if deadline.remaining() <= 0:
                raise KafkaTimeoutError("no broker is reachable")
            self._client.poll(min(deadline.remaining(), _POLL_SLICE_MS), disable_wakeup=True)

    def _controller(self, deadline: _Deadline) -> int:
        self._ensure_metadata(deadline)
        cluster = self._metadata.cluster
        controller = cluster.controller_id
        if controller is not None and controller >= 0 and cluster.broker(controller) is not None:
            return int(controller)
        return self._any_node(deadline)

    def _broker_ids(self) -> list[int]:
        return [b.node_id for b in self._metadata.cluster.brokers()]

    def _api_version(self, node: int, api_key: int, deadline: _Deadline) -> int | None:
        """The version of ``api_key`` negotiated with ``node`` (None when the node does not
        support it), once the node is connected; a node not ready yet is a :class:`_Retry`."""
        if not self._client.await_ready(node, max(0.0, deadline.remaining())):
            raise _Retry(NodeNotReadyError(f"node {node} is not ready"))
        return self._client.api_version(node, api_key)

    def _request(
        self,
        node: int,
        api_key: int,
        body: Mapping[str, Any] | Callable[[int], Mapping[str, Any]],
        deadline: _Deadline,
    ) -> Any:
        """One request/response; connection problems become :class:`_Retry`.

        ``body`` may be a function of the negotiated version, for requests whose fields differ
        between versions (the encoder refuses values a version cannot carry).
        """
        version: int | None = None
        if callable(body):
            if not self._client.await_ready(node, max(0.0, deadline.remaining())):
                raise _Retry(NodeNotReadyError(f"node {node} is not ready"))
            version = self._client.api_version(node, api_key)
            if version is None:
                raise UnsupportedVersionError(
                    f"node {node} does not support {ApiKey(api_key).name}"
                )
            body = body(version)
        fut = self._client.send(node, api_key, body, version, timeout_ms=deadline.request_timeout())
        while not fut.is_done:
            remaining = deadline.remaining()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"{ApiKey(api_key).name} to node {node} did not complete within "
                    f"{deadline.budget:.0f} ms"
                )
            self._client.poll(min(remaining, _POLL_SLICE_MS), fut, disable_wakeup=True)
        if fut.failed():
            exc = fut.exception
            assert exc is not None
            if isinstance(
                exc, (KafkaConnectionError, NodeNotReadyError, KafkaTimeoutError)
            ) or getattr(exc, "retriable", False):
                raise _Retry(exc)
            raise exc
        # The decoded body of ``api_key``'s response: callers read it into its typed form.
        return fut.value

    def _with_retries(self, what: str, deadline: _Deadline, attempt: Callable[[], _R]) -> _R:
        """Run ``attempt`` until it stops raising :class:`_Retry` or time is up."""
        last: BaseException | None = None
        while True:
            try:
                return attempt()
            except KafkaTimeoutError as exc:
                if last is None:
                    raise
                raise KafkaTimeoutError(f"{exc} (last error: {last})") from exc
            except _Retry as retry:
                # A request that timed out because the budget ran out says less than the
                # broker error before it, which is what the caller needs to see.
                if not (last is not None and isinstance(retry.cause, KafkaTimeoutError)):
                    last = retry.cause
                if (
                    isinstance(last, BrokerResponseError)
                    and last.invalid_metadata
                    or isinstance(last, KafkaConnectionError)
                ):
                    self._metadata.request_update()
            wait = min(self._backoff_ms, deadline.remaining())
            if wait <= 0:
                raise KafkaTimeoutError(
                    f"{what} did not complete within {deadline.budget:.0f} ms"
                    + (f" (last error: {last})" if last is not None else "")
                )
            self._client.poll(wait, disable_wakeup=True)

    def _call(
        self, what: str, timeout_ms: float | timedelta | None, attempt: Callable[[_Deadline], _R]
    ) -> _R:
        with self._lock:
            self._ensure_open()
            deadline = _Deadline(self._time, to_timeout_ms(timeout_ms, self._default_timeout))
            self._ensure_metadata(deadline)
            return self._with_retries(what, deadline, lambda: attempt(deadline))

    def _coordinator(self, group_id: str, deadline: _Deadline) -> int:
        node = self._any_node(deadline)

        def body(version: int) -> dict[str, Any]:
            if version >= 4:
                return {"key_type": 0, "coordinator_keys": [group_id]}
            return {"key": group_id, "key_type": 0}

        resp: FindCoordinatorResponse = self._request(node, ApiKey.FIND_COORDINATOR, body, deadline)
        coords = resp.get("coordinators") or []
        entry: FindCoordinatorResponseCoordinator | FindCoordinatorResponse
        if coords:
            entry = coords[0]
        else:
            entry = resp
        code = int(entry.get("error_code", 0))
        if code:
            _raise_error(code, entry.get("error_message"), group_id=group_id)
        node_id = int(entry["node_id"])
        if self._metadata.cluster.broker(node_id) is None:
            # A coordinator the metadata does not list yet: refresh and try again.
            self._metadata.request_update()
            raise _Retry(
                KafkaError(f"coordinator {node_id} of group {group_id!r} not in metadata yet")
            )
        return node_id

    def supports(self, api_key: int, *, timeout_ms: float | timedelta | None = None) -> bool:
        """Whether a broker of the cluster (the least loaded one) supports ``api_key`` at a
        version this client speaks, e.g. ``ApiKey.CONSUMER_GROUP_HEARTBEAT`` for KIP-848."""

        def attempt(deadline: _Deadline) -> bool:
            return self._api_version(self._any_node(deadline), int(api_key), deadline) is not None

        return bool(self._call("supports", timeout_ms, attempt))

    # ------------------------------------------------------------------ topics ---------------
    def create_topics(
        self,
        new_topics: Mapping[str, int] | Iterable[str],
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        timeout_ms: float | timedelta | None = None,
        validate_only: bool = False,
        if_not_exists: bool = False,
    ) -> None:
        """Create topics (``{name: num_partitions}``, or names for the broker defaults).

        Raises the broker's error (``TopicAlreadyExistsError``, ``InvalidReplicationFactorError``,
        ...) for the first topic that fails; ``if_not_exists`` ignores topics that exist.
        """
        if isinstance(new_topics, Mapping):
            wanted = {str(t): int(n) for t, n in new_topics.items()}
        else:
            wanted = {str(t): -1 for t in new_topics}
        for name, parts in wanted.items():
            if not name:
                raise ValueError("topic names must not be empty")
            if parts == 0 or parts < -1:
                raise ValueError(f"topic {name!r}: num_partitions must be >= 1, got {parts}")
        config_list = [{"name": k, "value": v} for k, v in (configs or {}).items()]
        pending = dict(wanted)

        def attempt(deadline: _Deadline) -> None:
            body = {
                "topics": [
                    {
                        "name": t,
                        "num_partitions": n,
                        "replication_factor": replication_factor,
                        "assignments": [],
                        "configs": config_list,
                    }
                    for t, n in pending.items()
                ],
                "timeout_ms": deadline.request_timeout(),
                "validate_only": validate_only,
            }
            resp: CreateTopicsResponse = self._request(
                self._controller(deadline), ApiKey.CREATE_TOPICS, body, deadline
            )
            retry: _Retry | None = None
            for result in resp.get("topics") or []:
                name = result["name"]
                code = int(result.get("error_code", 0))
                if code == 0 or (code == 36 and if_not_exists):
                    pending.pop(name, None)
                    continue
                try:
                    _raise_error(code, result.get("error_message"), topic=name)
                except _Retry as again:
                    retry = again  # ask again for this topic once the others are known
            if retry is not None:
                raise retry

        self._call("create_topics", timeout_ms, attempt)

    def delete_topics(
        self, topics: Iterable[str], *, timeout_ms: float | timedelta | None = None
    ) -> None:
        """Delete topics; raises ``UnknownTopicOrPartitionError`` naming a missing one."""
        pending = [str(t) for t in topics]

        def attempt(deadline: _Deadline) -> None:
            def body(version: int) -> dict[str, Any]:
                if version >= 6:
                    return {
                        "topics": [{"name": t} for t in pending],
                        "timeout_ms": deadline.request_timeout(),
                    }
                return {"topic_names": list(pending), "timeout_ms": deadline.request_timeout()}

            resp: DeleteTopicsResponse = self._request(
                self._controller(deadline), ApiKey.DELETE_TOPICS, body, deadline
            )
            retry: _Retry | None = None
            for result in resp.get("responses") or []:
                name = result.get("name")
                code = int(result.get("error_code", 0))
                if code == 0:
                    if name in pending:
                        pending.remove(name)
                    continue
                try:
                    # A topic that does not exist stays missing: report it, do not retry.
                    _raise_error(
                        code,
                        result.get("error_message"),
                        no_retry=(_UNKNOWN_TOPIC_OR_PARTITION,),
                        topic=name,
                    )
                except _Retry as again:
                    retry = again
            if retry is not None:
                raise retry

        self._call("delete_topics", timeout_ms, attempt)

    def create_partitions(
        self,
        new_counts: Mapping[str, int],
        *,
        timeout_ms: float | timedelta | None = None,
        validate_only: bool = False,
    ) -> None:
        """Raise topics' partition counts to the given totals (``{topic: total}``).

        Brokers without CreatePartitions (e.g. Tansu) raise ``UnsupportedVersionError``.
        """
        pending = {str(t): int(n) for t, n in new_counts.items()}

        def attempt(deadline: _Deadline) -> None:
            body = {
                "topics": [
                    {"name": t, "count": n, "assignments": None} for t, n in pending.items()
                ],
                "timeout_ms": deadline.request_timeout(),
                "validate_only": validate_only,
            }
            resp: CreatePartitionsResponse = self._request(
                self._controller(deadline), ApiKey.CREATE_PARTITIONS, body, deadline
            )
            for result in resp.get("results") or []:
                code = int(result.get("error_code", 0))
                if code:
                    _raise_error(code, result.get("error_message"), topic=result["name"])
                pending.pop(result["name"], None)

        self._call("create_partitions", timeout_ms, attempt)

    def list_topics(
        self, *, timeout_ms: float | timedelta | None = None, include_internal: bool = False
    ) -> dict[str, int]:
        """Every topic and its partition count."""

        def attempt(deadline: _Deadline) -> dict[str, int]:
            body = {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
            resp: MetadataResponse = self._request(
                self._any_node(deadline), ApiKey.METADATA, body, deadline
            )
            out: dict[str, int] = {}
            for t in resp.get("topics") or []:
                name = t.get("name")
                if int(t.get("error_code", 0)) or name is None:
                    continue
                if t.get("is_internal") and not include_internal:
                    continue
                out[name] = len(t.get("partitions") or [])
            return out

        return self._call("list_topics", timeout_ms, attempt)

    def describe_topics(
        self,
        topics: Iterable[str] | None = None,
        *,
        timeout_ms: float | timedelta | None = None,
        include_internal: bool = False,
    ) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and in-sync replicas of the given topics (every topic
        when None); raises ``UnknownTopicOrPartitionError`` naming a missing one."""
        wanted = None if topics is None else [str(t) for t in topics]

        def attempt(deadline: _Deadline) -> dict[str, TopicDescription]:
            body = {
                "topics": None if wanted is None else [{"name": t} for t in wanted],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
            resp: MetadataResponse = self._request(
                self._any_node(deadline), ApiKey.METADATA, body, deadline
            )
            out: dict[str, TopicDescription] = {}
            for t in resp.get("topics") or []:
                name = t.get("name")
                code = int(t.get("error_code", 0))
                if code:
                    _raise_error(code, None, no_retry=(_UNKNOWN_TOPIC_OR_PARTITION,), topic=name)
                if name is None or (
                    t.get("is_internal") and not include_internal and wanted is None
                ):
                    continue
                parts = []
                for p in sorted(t.get("partitions") or [], key=lambda p: int(p["partition_index"])):
                    epoch = int(p.get("leader_epoch", -1))
                    parts.append(
                        PartitionDescription(
                            int(p["partition_index"]),
                            int(p.get("leader_id", -1)),
                            tuple(p.get("replica_nodes") or ()),
                            tuple(p.get("isr_nodes") or ()),
                            tuple(p.get("offline_replicas") or ()),
                            epoch if epoch >= 0 else None,
                        )
                    )
                topic_id = t.get("topic_id")
                out[name] = TopicDescription(
                    name,
                    str(topic_id) if topic_id is not None and topic_id.int else None,
                    bool(t.get("is_internal", False)),
                    tuple(parts),
                )
            return dict(sorted(out.items()))

        return self._call("describe_topics", timeout_ms, attempt)

    def describe_configs(
        self,
        resources: Iterable[ConfigResource | tuple[str, str]],
        *,
        keys: Iterable[str] | None = None,
        timeout_ms: float | timedelta | None = None,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """The configuration of topics and brokers (``ConfigResource("topic", name)``,
        ``ConfigResource("broker", "<id>")``): every key, or only ``keys``."""
        wanted = [ConfigResource(*r) for r in resources]
        for r in wanted:
            if r.type not in _RESOURCE_TYPES:
                raise ValueError(
                    f"config resource type must be one of {sorted(_RESOURCE_TYPES)}, got {r.type!r}"
                )
        key_list = None if keys is None else [str(k) for k in keys]
        done: dict[ConfigResource, dict[str, ConfigEntry]] = {}

        def attempt(deadline: _Deadline) -> dict[ConfigResource, dict[str, ConfigEntry]]:
            # A broker's own configuration is only known to that broker.
            by_node: dict[int | None, list[ConfigResource]] = {}
            for r in wanted:
                if r in done:
                    continue
                by_node.setdefault(int(r.name) if r.type == "broker" else None, []).append(r)
            for node, batch in by_node.items():
                target = self._any_node(deadline) if node is None else node
                body = {
                    "resources": [
                        {
                            "resource_type": _RESOURCE_TYPES[r.type],
                            "resource_name": r.name,
                            "configuration_keys": key_list,
                        }
                        for r in batch
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                }
                resp: DescribeConfigsResponse = self._request(
                    target, ApiKey.DESCRIBE_CONFIGS, body, deadline
                )
                types = {v: k for k, v in _RESOURCE_TYPES.items()}
                for result in resp.get("results") or []:
                    resource = ConfigResource(
                        types.get(int(result["resource_type"]), "?"), result["resource_name"]
                    )
                    code = int(result.get("error_code", 0))
                    if code:
                        _raise_error(
                            code,
                            result.get("error_message"),
                            no_retry=(_UNKNOWN_TOPIC_OR_PARTITION,),
                            **{resource.type: resource.name},
                        )
                    done[resource] = {
                        c["name"]: ConfigEntry(
                            c["name"],
                            c.get("value"),
                            _CONFIG_SOURCES.get(int(c.get("config_source", -1)), "UNKNOWN"),
                            bool(c.get("read_only")),
                            bool(c.get("is_sensitive")),
                        )
                        for c in sorted(result.get("configs") or [], key=lambda c: c["name"])
                    }
            return {r: done[r] for r in wanted if r in done}

        return self._call("describe_configs", timeout_ms, attempt)

    # ------------------------------------------------------------------ records --------------
    def _leaders(self, topics: Iterable[str], deadline: _Deadline) -> None:
        """Make the metadata cover ``topics`` (refreshing until their leaders are known)."""
        wanted = set(topics)
        self._metadata.set_topics(set(self._metadata.topics()) | wanted)
        while True:
            cluster = self._metadata.cluster
            missing = [t for t in wanted if not cluster.partitions_for_topic(t)]
            if not missing:
                return
            for t in missing:
                err = self._metadata.topic_error(t)
                if err is not None and not (err.retriable or err.invalid_metadata):
                    raise err
            if deadline.remaining() <= 0:
                raise KafkaTimeoutError(f"no metadata for topics {sorted(missing)}")
            self._metadata.request_update()
            self._client.poll(min(deadline.remaining(), _POLL_SLICE_MS), disable_wakeup=True)

    def _by_leader(
        self, tps: Iterable[TopicPartition], deadline: _Deadline
    ) -> dict[int, list[TopicPartition]]:
        tps = list(tps)
        self._leaders({tp.topic for tp in tps}, deadline)
        cluster = self._metadata.cluster
        out: dict[int, list[TopicPartition]] = {}
        for tp in tps:
            if cluster.partition(tp) is None:
                raise _error(3, "no such partition", topic=tp.topic, partition=tp.partition)
            leader = cluster.leader_for(tp)
            if leader is None:
                self._metadata.request_update()
                raise _Retry(_error(5, None, topic=tp.topic, partition=tp.partition))
            out.setdefault(leader, []).append(tp)
        return out

    def _per_partition_round(
        self,
        api_key: int,
        pending: dict[TopicPartition, int],
        deadline: _Deadline,
        partition_entry: Callable[[TopicPartition], dict[str, int]],
        make_body: Callable[[list[dict[str, Any]]], dict[str, Any]],
        on_success: Callable[[TopicPartition, Mapping[str, Any]], None],
    ) -> None:
        """One round of a per-partition request (DeleteRecords, ListOffsets): every partition
        in ``pending`` is asked of its leader, one request per leader built by ``make_body``
        from the ``[{"name", "partitions"}]`` topic list (``partition_entry`` per partition).

        A partition answered without error goes to ``on_success`` and leaves ``pending``; a
        non-retriable error is raised at once; a retriable one, or a partition left
        unanswered, raises :class:`_Retry` once every leader was asked.
        """
        retry: BaseException | None = None
        for leader, tps in self._by_leader(list(pending), deadline).items():
            topics: dict[str, list[dict[str, int]]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(partition_entry(tp))
            body = make_body([{"name": t, "partitions": p} for t, p in topics.items()])
            resp: ListOffsetsResponse | DeleteRecordsResponse = self._request(
                leader, api_key, body, deadline
            )
            for t in resp.get("topics") or []:
                for p in t.get("partitions") or []:
                    tp = TopicPartition(t["name"], int(p["partition_index"]))
                    code = int(p.get("error_code", 0))
                    if code == 0:
                        on_success(tp, p)
                        pending.pop(tp, None)
                        continue
                    err = _error(code, None, topic=tp.topic, partition=tp.partition)
                    if err.retriable or err.invalid_metadata:
                        retry = err
                        continue
                    raise err
        if retry is not None or pending:
            raise _Retry(retry or KafkaError(f"no answer for {sorted(pending)}"))

    def delete_records(
        self,
        before_offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: float | timedelta | None = None,
    ) -> dict[TopicPartition, int]:
        """Delete records below the given offsets; returns each partition's new log start
        (low watermark). Offset -1 means the high watermark (delete everything)."""
        pending = {TopicPartition(*tp): int(off) for tp, off in before_offsets.items()}
        done: dict[TopicPartition, int] = {}

        def attempt(deadline: _Deadline) -> dict[TopicPartition, int]:
            def on_success(tp: TopicPartition, p: Mapping[str, Any]) -> None:
                done[tp] = int(p["low_watermark"])

            self._per_partition_round(
                ApiKey.DELETE_RECORDS,
                pending,
                deadline,
                lambda tp: {"partition_index": tp.partition, "offset": pending[tp]},
                lambda topics: {"topics": topics, "timeout_ms": deadline.request_timeout()},
                on_success,
            )
            return dict(done)

        return self._call("delete_records", timeout_ms, attempt)

    def list_offsets(
        self,
        specs: Mapping[TopicPartition, int],
        *,
        timeout_ms: float | timedelta | None = None,
        read_committed: bool = False,
    ) -> dict[TopicPartition, ListOffsetsResult]:
        """Offsets by spec per partition: :data:`EARLIEST` (-2, log start), :data:`LATEST`
        (-1, high watermark) or a timestamp in ms (first offset at or after it; offset -1 when
        there is none)."""
        pending = {TopicPartition(*tp): int(spec) for tp, spec in specs.items()}
        done: dict[TopicPartition, ListOffsetsResult] = {}

        def attempt(deadline: _Deadline) -> dict[TopicPartition, ListOffsetsResult]:
            def on_success(tp: TopicPartition, p: Mapping[str, Any]) -> None:
                offset = int(p.get("offset", -1))
                old = p.get("old_style_offsets") or []
                if offset < 0 and old:
                    offset = int(old[0])
                epoch = int(p.get("leader_epoch", -1))
                done[tp] = ListOffsetsResult(
                    offset, int(p.get("timestamp", -1)), epoch if epoch >= 0 else None
                )

            self._per_partition_round(
                ApiKey.LIST_OFFSETS,
                pending,
                deadline,
                lambda tp: {
                    "partition_index": tp.partition,
                    "timestamp": pending[tp],
                    "max_num_offsets": 1,
                },
                lambda topics: {
                    "replica_id": -1,
                    "isolation_level": 1 if read_committed else 0,
                    "topics": topics,
                },
                on_success,
            )
            return dict(done)

        return self._call("list_offsets", timeout_ms, attempt)

    # ------------------------------------------------------------------ groups ---------------
    # ------------------------------------------------------------------ lifecycle ------------
    def close(self) -> None:
        """Close the connections. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._client.close()
            self._network.close()

    def __enter__(self) -> KafkaAdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

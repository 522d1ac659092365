"""What the engine needs from the network client and the metadata, as ``typing.Protocol`` s.

The fetcher, the offset fetcher and the coordinators are written against these instead of the
concrete :class:`~kafkaconsumer.network.consumer_client.ConsumerNetworkClient` and
:class:`~kafkaconsumer.metadata.Metadata` (Java's ``ConsumerNetworkClient`` and
``ConsumerMetadata``), so that a unit test's in-process double implements exactly what its
engine calls, and ``mypy`` checks that it does. Each engine asks for the narrowest protocol it
uses; the real classes satisfy all of them. Nothing is probed at run time: a method missing from
a double is a type error, not a silent fallback.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any, Protocol

from kafkaconsumer.network.future import Future
from kafkaconsumer.structs import TopicPartition

__all__ = [
    "ClusterView",
    "FetchMetadata",
    "OffsetMetadata",
    "RequestClient",
    "FetchClient",
    "OffsetClient",
    "CoordinatorClient",
]


class ClusterView(Protocol):
    """One metadata snapshot, as the fetcher and the offset fetcher read it (Java ``Cluster``).

    Thread-safety: a snapshot is immutable; any thread may read it.
    """

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The node id leading ``tp`` (None when unknown)."""
        ...

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        """The leader epoch of ``tp`` (None when unknown)."""
        ...

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id (None when unknown)."""
        ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic with this id (None when unknown)."""
        ...

    def brokers(self) -> Sized:
        """The brokers of the cluster (the fetcher only counts them)."""
        ...


class FetchMetadata(Protocol):
    """What the fetcher needs from the metadata.

    Thread-safety: implementations are safe to call from any thread.
    """

    @property
    def cluster(self) -> ClusterView:
        """The current snapshot."""
        ...

    def request_update(self) -> int:
        """Ask for a refresh soon; returns the current update version."""
        ...

    def update_partition_leadership(
        self, leaders: Mapping[TopicPartition, tuple[int, int]], nodes: Iterable[Any] = ()
    ) -> set[TopicPartition]:
        """Take new ``(leader, epoch)`` per partition from a fetch answer (KIP-951), with the
        answer's broker addresses; returns the partitions whose leader changed."""
        ...


class OffsetMetadata(FetchMetadata, Protocol):
    """What the offset fetcher needs from the metadata.

    Thread-safety: implementations are safe to call from any thread.
    """

    @property
    def update_version(self) -> int:
        """Bumped by every successful refresh."""
        ...

    def add_transient_topics(self, topics: Iterable[str]) -> None:
        """Also fetch metadata for ``topics`` for a while (lookups outside the subscription)."""
        ...

    def update_requested(self) -> bool:
        """True when a refresh was asked for and has not happened yet."""
        ...


class RequestClient(Protocol):
    """Send a request and poll the network until its future completes.

    Thread-safety: implementations are safe to call from any thread (the network client
    serialises I/O under its own lock).
    """

    def send(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> Future[Any]:
        """Queue a request (never blocks) and return its future."""
        ...

    def poll(self, timeout_ms: float | None = None, future: Future[Any] | None = None) -> bool:
        """Do network I/O until ``future`` is done or the timeout passes."""
        ...

    def api_version(self, node_id: int, api_key: int) -> int | None:
        """The negotiated version of ``api_key`` with the node (None until connected)."""
        ...


class FetchClient(RequestClient, Protocol):
    """What the fetcher needs from the network client.

    Thread-safety: as :class:`RequestClient`.
    """

    def is_unavailable(self, node_id: int) -> bool:
        """True while the node's last connect failed and it is backing off."""
        ...

    def try_connect(self, node_id: int) -> None:
        """Start connecting to ``node_id`` unless connected or backing off; never blocks."""
        ...


class OffsetClient(RequestClient, Protocol):
    """What the offset fetcher needs from the network client.

    Thread-safety: as :class:`RequestClient`.
    """

    def execute(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(network_client)`` under the network client's lock."""
        ...

    def await_metadata_update(self, timeout_ms: float) -> bool:
        """Request a metadata refresh and poll until it lands (raises on timeout)."""
        ...

    def has_pending(self, node_id: int, api_key: int) -> bool:
        """True when a request of ``api_key`` to the node is unsent or awaits its response."""
        ...

    def is_unavailable(self, node_id: int) -> bool:
        """True while the node's last connect failed and it is backing off."""
        ...


class CoordinatorClient(FetchClient, Protocol):
    """What the group coordinators need from the network client.

    Thread-safety: as :class:`RequestClient`.
    """

    def poll_no_wakeup(self) -> None:
        """One non-blocking round of I/O that a pending wakeup does not interrupt."""
        ...

    def await_metadata_update(self, timeout_ms: float) -> bool:
        """Request a metadata refresh and poll until it lands (raises on timeout)."""
        ...

    def least_loaded_node(self) -> int | None:
        """The best node for a request any broker can answer (None when none is usable)."""
        ...

    def ready(self, node_id: int) -> bool:
        """True when the node can take a request now; otherwise start connecting."""
        ...

    def try_connect(self, node_id: int) -> None:
        """Start connecting to ``node_id`` unless connected or backing off."""
        ...

    def disconnect_async(self, node_id: int) -> None:
        """Close the connection to ``node_id`` on the next poll."""
        ...

    def disable_wakeups(self) -> None:
        """Ignore wakeup() from now on (close)."""
        ...

"""Topic metadata for the consumer's ``list_topics()`` and ``partitions_for()`` (Java's
``TopicMetadataFetcher``): one Metadata request for the topics asked about, outside the
consumer's own metadata (which tracks only what it subscribes to), retried until the answer
has no retriable error or the caller's timer runs out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkaconsumer import errors as Errors
from kafkaconsumer.metadata import PartitionInfo
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.utils.timer import Timer

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import MetadataRequest, MetadataResponse

__all__ = ["TopicMetadataFetcher"]


class TopicMetadataFetcher:
    """Asks the cluster for topic metadata on behalf of the user's thread.

    Thread-safety: called by the user's thread only (the consumer's guard holds); the network
    client it uses is thread-safe. It keeps no state of its own.
    """

    def __init__(
        self,
        client: ConsumerNetworkClient,
        retry_backoff_ms: int,
        last_error_note: Callable[[], str],
    ) -> None:
        """Ask over ``client``; wait ``retry_backoff_ms`` between attempts; ``last_error_note``
        says why the cluster could not be reached, for the timeout's message."""
        self._client = client
        self._retry_backoff_ms = retry_backoff_ms
        self._last_error_note = last_error_note

    def fetch(self, topics: list[str] | None, timer: Timer) -> dict[str, list[PartitionInfo]]:
        """The partitions of ``topics`` (every topic the user may see for None), asking any
        broker until an answer without retriable errors comes or ``timer`` expires."""
        while True:
            node = self._client.least_loaded_node()
            if node is None:
                self._client.poll(timeout_ms=min(timer.remaining_ms, self._retry_backoff_ms))
            else:
                body: MetadataRequest = {
                    "topics": None
                    if topics is None
                    else [{"name": t, "topic_id": uuid.UUID(int=0)} for t in topics],
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False,
                }
                fut = self._client.send(node, ApiKey.METADATA, body)
                while not fut.is_done and timer.not_expired():
                    self._client.poll(timeout_ms=timer.remaining_ms, future=fut)
                    timer.update()
                if fut.succeeded():
                    resp: MetadataResponse = fut.value
                    out: dict[str, list[PartitionInfo]] = {}
                    retry = False
                    for t in resp.get("topics", ()):
                        code = t.get("error_code", 0)
                        name = t.get("name")
                        if name is None or code == Errors.UnknownTopicOrPartitionError.errno:
                            # Null names only come back for topics asked for by id (v12+),
                            # which this request never does.
                            continue
                        if code == Errors.TopicAuthorizationFailedError.errno:
                            raise Errors.TopicAuthorizationFailedError(
                                f"not authorized to describe topic {name}",
                                unauthorized_topics={name},
                            )
                        if code == Errors.InvalidTopicError.errno:
                            raise Errors.InvalidTopicError(f"invalid topic {name!r}")
                        if code != 0:
                            retry = True
                            continue
                        parts = []
                        for p in t.get("partitions", ()):
                            epoch = p.get("leader_epoch", -1)
                            parts.append(
                                PartitionInfo(
                                    name,
                                    p["partition_index"],
                                    p.get("leader_id", -1),
                                    None if epoch is None or epoch < 0 else epoch,
                                    tuple(p.get("replica_nodes", ())),
                                    tuple(p.get("isr_nodes", ())),
                                    tuple(p.get("offline_replicas", ())),
                                )
                            )
                        parts.sort(key=lambda pi: pi.partition)
                        out[name] = parts
                    if not retry:
                        return out
                elif fut.failed() and not getattr(fut.exception, "retriable", False):
                    assert fut.exception is not None
                    raise fut.exception
            timer.update()
            if timer.is_expired():
                raise Errors.KafkaTimeoutError(
                    f"Timeout of {timer.timeout_ms}ms expired before fetching topic metadata"
                    f"{self._last_error_note()}"
                )
            timer.sleep(min(self._retry_backoff_ms, timer.remaining_ms))

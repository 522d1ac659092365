"""One share session with one broker (Java ``ShareSessionHandler`` and ``ShareRequestMetadata``).

A share session is the broker's record of which partitions a member fetches from it. The first
ShareFetch opens it (epoch 0) and lists every partition; each later request carries the next
epoch and only the changes: partitions added (in ``topics``) and partitions to forget. Epoch -1
closes the session. When the broker no longer knows the session (SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH) or a request fails on the network, the next request opens a new
one. Acknowledgements ride on the session: a ShareAcknowledge needs an open session (a new
session's epoch cannot carry them), a ShareFetch carries them beside the partitions.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from kafkaconsumer.internals.fetch.acknowledgements import Acknowledgements
from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = ["INITIAL_EPOCH", "FINAL_EPOCH", "ShareSessionHandler", "next_epoch"]

#: The epoch that opens a share session.
INITIAL_EPOCH = 0
#: The epoch that closes a share session.
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

# Error codes that mean the broker lost this session: the next request opens a new one.
_SHARE_SESSION_NOT_FOUND = 122
_INVALID_SHARE_SESSION_EPOCH = 123


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: -1 stays -1, the largest int32 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _MAX_EPOCH:
        return 1
    return epoch + 1


class ShareSessionHandler:
    """The share session of one member with one broker.

    ``add_partition_to_fetch()`` names, before each request, every partition to fetch from this
    broker (and its acknowledgements); :meth:`build_share_fetch` turns that into the request
    body against what the session already holds.

    Thread-safety: not thread-safe; guarded by the lock of the share consume request manager that
    owns it.
    """

    __slots__ = (
        "node",
        "member_id",
        "epoch",
        "_session_partitions",
        "_next_partitions",
        "_next_acknowledgements",
    )

    def __init__(self, node: int, member_id: str) -> None:
        """A handler for broker ``node``, no session open yet."""
        self.node = node
        self.member_id = member_id
        #: The epoch the next request carries.
        self.epoch = INITIAL_EPOCH
        # Partitions the broker's session holds: tp -> topic id.
        self._session_partitions: dict[TopicPartition, uuid.UUID] = {}
        self._next_partitions: dict[TopicPartition, uuid.UUID] = {}
        self._next_acknowledgements: dict[TopicPartition, tuple[uuid.UUID, Acknowledgements]] = {}

    @property
    def is_new_session(self) -> bool:
        """Whether the next request opens a session (epoch 0)."""
        return self.epoch == INITIAL_EPOCH

    @property
    def is_final(self) -> bool:
        """Whether the next request closes the session (epoch -1)."""
        return self.epoch == FINAL_EPOCH

    def session_partitions(self) -> dict[TopicPartition, uuid.UUID]:
        """The partitions the broker's session holds."""
        return dict(self._session_partitions)

    def add_partition_to_fetch(
        self, tp: TopicPartition, topic_id: uuid.UUID, acks: Acknowledgements | None = None
    ) -> None:
        """Fetch ``tp`` in the next ShareFetch, with ``acks`` piggybacked."""
        self._next_partitions[tp] = topic_id
        if acks:
            self.add_partition_to_acknowledge(tp, topic_id, acks)

    def add_partition_to_acknowledge(
        self, tp: TopicPartition, topic_id: uuid.UUID, acks: Acknowledgements
    ) -> None:
        """Send ``acks`` for ``tp`` in the next request (ShareAcknowledge or ShareFetch).
        Acknowledgements still waiting for that request (queued while one was in flight)
        are folded into ``acks``, the later type winning for an offset, so none is lost;
        ``acks`` then completes for them all (and the queued ones with it). The fold costs
        the size of ``acks``, however long the queue grew."""
        queued = self._next_acknowledgements.get(tp)
        if queued is not None and queued[1] is not acks:
            acks.take_in(queued[1])
        self._next_acknowledgements[tp] = (topic_id, acks)

    def build_share_fetch(self) -> tuple[dict[str, Any], dict[TopicPartition, Acknowledgements]]:
        """The ``topics``/``forgotten_topics_data``/``share_session_epoch`` of the next
        ShareFetch, and the acknowledgements it carries (by partition). Resets what the next
        request is to carry."""
        added: dict[TopicPartition, uuid.UUID] = {}
        removed: dict[TopicPartition, uuid.UUID] = {}
        nxt = self._next_partitions
        if self.is_new_session:
            self._session_partitions = dict(nxt)
            added = dict(nxt)
        else:
            for tp, topic_id in list(self._session_partitions.items()):
                wanted = nxt.get(tp)
                if wanted is None:
                    del self._session_partitions[tp]
                    removed[tp] = topic_id
                elif wanted != topic_id:
                    # The topic was recreated: forget the old id, fetch the new one.
                    removed[tp] = topic_id
                    self._session_partitions[tp] = wanted
                    added[tp] = wanted
            for tp, topic_id in nxt.items():
                if tp not in self._session_partitions:
                    self._session_partitions[tp] = topic_id
                    added[tp] = topic_id
        acks = self._next_acknowledgements
        # Acknowledgements for a partition already in the session go with it as well.
        topics: dict[uuid.UUID, dict[int, dict[str, Any]]] = {}
        for tp, topic_id in added.items():
            topics.setdefault(topic_id, {})[tp.partition] = {
                "partition_index": tp.partition,
                "acknowledgement_batches": [],
            }
        sent_acks: dict[TopicPartition, Acknowledgements] = {}
        for tp, (topic_id, partition_acks) in acks.items():
            entry = topics.setdefault(topic_id, {}).setdefault(
                tp.partition, {"partition_index": tp.partition, "acknowledgement_batches": []}
            )
            entry["acknowledgement_batches"] = partition_acks.batches()
            sent_acks[tp] = partition_acks
        forgotten: dict[uuid.UUID, list[int]] = {}
        for tp, topic_id in removed.items():
            forgotten.setdefault(topic_id, []).append(tp.partition)
        self._next_partitions = {}
        self._next_acknowledgements = {}
        body = {
            "share_session_epoch": self.epoch,
            "topics": [
                {"topic_id": topic_id, "partitions": list(parts.values())}
                for topic_id, parts in topics.items()
            ],
            "forgotten_topics_data": [
                {"topic_id": topic_id, "partitions": sorted(parts)}
                for topic_id, parts in forgotten.items()
            ],
        }
        return body, sent_acks

    def build_share_acknowledge(
        self,
    ) -> tuple[dict[str, Any], dict[TopicPartition, Acknowledgements]] | None:
        """The ``topics``/``share_session_epoch`` of a ShareAcknowledge carrying what is queued,
        or None when no session is open (a new session cannot carry acknowledgements)."""
        if self.is_new_session:
            return None
        topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
        sent_acks: dict[TopicPartition, Acknowledgements] = {}
        for tp, (topic_id, acks) in self._next_acknowledgements.items():
            topics.setdefault(topic_id, []).append(
                {"partition_index": tp.partition, "acknowledgement_batches": acks.batches()}
            )
            sent_acks[tp] = acks
        self._next_acknowledgements = {}
        body = {
            "share_session_epoch": self.epoch,
            "topics": [{"topic_id": t, "partitions": p} for t, p in topics.items()],
        }
        return body, sent_acks

    def take_pending_acknowledgements(self) -> dict[TopicPartition, Acknowledgements]:
        """Remove and return what was queued but not sent."""
        out = {tp: acks for tp, (_, acks) in self._next_acknowledgements.items()}
        self._next_acknowledgements = {}
        return out

    def handle_response(self, error_code: int) -> bool:
        """Move the epoch on after a ShareFetch or ShareAcknowledge answered with top-level
        ``error_code``; False when the response is not to be used."""
        if error_code in (_SHARE_SESSION_NOT_FOUND, _INVALID_SHARE_SESSION_EPOCH):
            logger.info(
                "share session with node %s (epoch %s) is gone (error %s); opening a new one",
                self.node,
                self.epoch,
                error_code,
            )
            self._reset()
            return False
        self.epoch = next_epoch(self.epoch)
        return error_code == 0

    def handle_error(self, exc: BaseException) -> None:
        """A request failed on the network: the next request opens a new session."""
        logger.debug("share session with node %s reset after %r", self.node, exc)
        self._reset()

    def notify_close(self) -> None:
        """The next request closes the session."""
        self.epoch = FINAL_EPOCH

    def _reset(self) -> None:
        self.epoch = INITIAL_EPOCH
        self._session_partitions = {}

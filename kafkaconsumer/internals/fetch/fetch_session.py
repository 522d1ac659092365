"""Client side of incremental fetch sessions, KIP-227 (Java ``FetchSessionHandler``).

One handler per broker. The first request of a session is "full" (every partition to fetch);
once the broker answers with a session id, later requests are "incremental": they carry only the
partitions whose fetch parameters changed, plus ``forgotten_topics_data`` for partitions that left
the session. Any session error makes the next request a full one again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import NamedTuple

from kafkaconsumer.structs import TopicPartition

logger = logging.getLogger(__name__)

__all__ = [
    "FetchMetadata",
    "PartitionData",
    "FetchRequestData",
    "FetchSessionHandler",
    "INVALID_SESSION_ID",
    "INITIAL_EPOCH",
    "FINAL_EPOCH",
    "ZERO_UUID",
]

#: Session id 0 means "no session".
INVALID_SESSION_ID = 0
#: Epoch 0 asks the broker to create a session (full request).
INITIAL_EPOCH = 0
#: Epoch -1 closes a session, or (with session id 0) asks for a sessionless full fetch.
FINAL_EPOCH = -1
#: The null topic id (a topic without an id, or an old broker).
ZERO_UUID = uuid.UUID(int=0)


class FetchMetadata(NamedTuple):
    """The (session id, epoch) pair sent in every fetch request.

    Thread-safety: immutable (a NamedTuple).
    """

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        """Requests at epoch 0 or -1 list every partition."""
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def next_close_existing_attempt_new(self) -> FetchMetadata:
        """Close the current session (if any) and ask for a new one."""
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        """The next epoch of the same session (wrapping past int32 max to 1, as Java does)."""
        nxt = self.epoch + 1
        return FetchMetadata(self.session_id, 1 if nxt > 0x7FFFFFFF else nxt)

    def next_close_existing(self) -> FetchMetadata:
        """The epoch that closes this session."""
        return FetchMetadata(self.session_id, FINAL_EPOCH)


#: A sessionless full fetch (sessions disabled, or brokers older than Fetch v7).
LEGACY_METADATA = FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH)
_INITIAL = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)


class PartitionData(NamedTuple):
    """Fetch parameters of one partition; a change in any of them re-sends the partition.

    Thread-safety: immutable (a NamedTuple).
    """

    topic_id: uuid.UUID
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


class FetchRequestData:
    """What to put in one fetch request, as decided by :meth:`FetchSessionHandler.Builder.build`.

    Thread-safety: immutable after construction.
    """

    __slots__ = (
        "to_send",
        "to_forget",
        "to_replace",
        "forgotten_topic_ids",
        "session_partitions",
        "metadata",
        "can_use_topic_ids",
    )

    def __init__(
        self,
        to_send: dict[TopicPartition, PartitionData],
        to_forget: list[TopicPartition],
        to_replace: list[TopicPartition],
        session_partitions: dict[TopicPartition, PartitionData],
        metadata: FetchMetadata,
        can_use_topic_ids: bool,
        forgotten_topic_ids: dict[TopicPartition, uuid.UUID] | None = None,
    ) -> None:
        """Hold the parts of one fetch request as computed by the session builder."""
        #: Partitions to list in ``topics`` (all of them for a full request).
        self.to_send = to_send
        #: Partitions to list in ``forgotten_topics_data`` (incremental requests only).
        self.to_forget = to_forget
        #: Partitions whose topic id changed: forgotten under the old id, sent under the new one.
        self.to_replace = to_replace
        #: The topic id each partition of ``to_forget`` and ``to_replace`` had in the session:
        #: the broker knows it under that id (for a recreated topic, the old one).
        self.forgotten_topic_ids = forgotten_topic_ids if forgotten_topic_ids is not None else {}
        #: Every partition of the session after this request (what the fetch covers).
        self.session_partitions = session_partitions
        self.metadata = metadata
        #: True when every partition has a topic id, so Fetch v13+ may be used.
        self.can_use_topic_ids = can_use_topic_ids

    @property
    def is_full(self) -> bool:
        """True for a full request."""
        return self.metadata.is_full

    def __repr__(self) -> str:
        return (
            f"FetchRequestData(metadata={self.metadata}, send={len(self.to_send)}, "
            f"forget={len(self.to_forget)}, replace={len(self.to_replace)}, "
            f"session={len(self.session_partitions)})"
        )


class FetchSessionHandler:
    """Tracks the fetch session with one broker.

    Thread-safety: not thread-safe; the fetcher calls it under its own lock.
    """

    def __init__(self, node: int, enabled: bool = True) -> None:
        """Track the session with broker ``node``; ``enabled=False`` sends full (legacy) fetches."""
        self.node = node
        self.enabled = enabled
        # The fields below change with each request and response: guarded by the fetcher's
        # lock (the fetch buffer's), under which every call is made.
        self.next_metadata: FetchMetadata = _INITIAL if enabled else LEGACY_METADATA
        self.session_partitions: dict[TopicPartition, PartitionData] = {}
        self.session_topic_names: dict[uuid.UUID, str] = {}

    def new_builder(self) -> FetchSessionHandler.Builder:
        """Start collecting the partitions of the next request."""
        return FetchSessionHandler.Builder(self)

    class Builder:
        """Collects the partitions the fetcher wants, then diffs them against the session.

        Thread-safety: not thread-safe; used by one thread for one request.
        """

        def __init__(self, handler: FetchSessionHandler) -> None:
            """Start an empty set of wanted partitions for ``handler``'s session."""
            self._handler = handler
            self._next: dict[TopicPartition, PartitionData] = {}

        def add(self, tp: TopicPartition, data: PartitionData) -> None:
            """Fetch ``tp`` with ``data`` in the next request."""
            self._next[tp] = data

        def partitions(self) -> Iterable[TopicPartition]:
            """The partitions added so far."""
            return self._next.keys()

        def build(self) -> FetchRequestData:
            """Decide full vs incremental and what to send, forget and replace."""
            h = self._handler
            nxt = self._next
            can_use_ids = all(d.topic_id != ZERO_UUID for d in nxt.values())
            if h.next_metadata.is_full:
                h.session_partitions = nxt
                h.session_topic_names = {
                    d.topic_id: tp.topic for tp, d in nxt.items() if d.topic_id != ZERO_UUID
                }
                self._next = {}
                return FetchRequestData(dict(nxt), [], [], nxt, h.next_metadata, can_use_ids)

            to_send: dict[TopicPartition, PartitionData] = {}
            to_forget: list[TopicPartition] = []
            to_replace: list[TopicPartition] = []
            forgotten_ids: dict[TopicPartition, uuid.UUID] = {}
            session = h.session_partitions
            for tp in list(session):
                prev = session[tp]
                want = nxt.pop(tp, None)
                if want is None:
                    del session[tp]
                    to_forget.append(tp)
                    forgotten_ids[tp] = prev.topic_id
                elif want != prev:
                    if (
                        prev.topic_id != want.topic_id
                        and prev.topic_id != ZERO_UUID
                        and want.topic_id != ZERO_UUID
                    ):
                        # Topic recreated under a new id: the broker must drop the old one.
                        to_replace.append(tp)
                        forgotten_ids[tp] = prev.topic_id
                    session[tp] = want
                    to_send[tp] = want
            # What is left in `nxt` is new to the session; append keeps the fetch order.
            for tp, data in nxt.items():
                session[tp] = data
                to_send[tp] = data
            self._next = {}
            can_use_ids = all(d.topic_id != ZERO_UUID for d in session.values())
            if can_use_ids:
                h.session_topic_names = {d.topic_id: tp.topic for tp, d in session.items()}
            return FetchRequestData(
                to_send, to_forget, to_replace, session, h.next_metadata, can_use_ids, forgotten_ids
            )

    # -- responses -----------------------------------------------------------------------
    def handle_response(
        self,
        error_code: int,
        session_id: int,
        response_partitions: Iterable[TopicPartition],
        throttle_time_ms: int = 0,
    ) -> bool:
        """Advance the session after a response; False when the response must be ignored.

        ``response_partitions`` are the partitions the response carried.
        """
        if not self.enabled:
            # Sessionless: every response is used as is, every request stays full.
            return error_code == 0
        if error_code != 0:
            if error_code == 70:  # FETCH_SESSION_ID_NOT_FOUND
                logger.info(
                    "node %s: fetch session %d not found; starting a new session",
                    self.node,
                    self.next_metadata.session_id,
                )
                self.next_metadata = _INITIAL
            else:
                logger.info(
                    "node %s: fetch session %d failed with error %d; next fetch is full",
                    self.node,
                    self.next_metadata.session_id,
                    error_code,
                )
                self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        got = set(response_partitions)
        if self.next_metadata.is_full:
            if not got and throttle_time_ms > 0:
                # KIP-219: a throttled broker answers a full fetch with nothing; not an error.
                self.next_metadata = _INITIAL
                return False
            extra = got - self.session_partitions.keys()
            omitted = self.session_partitions.keys() - got
            if extra or omitted:
                logger.info(
                    "node %s: full fetch response does not match the request "
                    "(extra=%s omitted=%s); starting a new session",
                    self.node,
                    sorted(extra),
                    sorted(omitted),
                )
                self.next_metadata = _INITIAL
                return False
            if session_id == INVALID_SESSION_ID:
                self.next_metadata = _INITIAL
            else:
                if session_id != self.next_metadata.session_id:
                    logger.debug("node %s: created fetch session %d", self.node, session_id)
                self.next_metadata = FetchMetadata(session_id, 1)
            return True
        extra = got - self.session_partitions.keys()
        if extra:
            logger.info(
                "node %s: incremental fetch response names partitions outside session "
                "%d: %s; closing it",
                self.node,
                self.next_metadata.session_id,
                sorted(extra),
            )
            self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        if session_id == INVALID_SESSION_ID:
            logger.debug(
                "node %s: broker closed fetch session %d", self.node, self.next_metadata.session_id
            )
            self.next_metadata = _INITIAL
        else:
            self.next_metadata = self.next_metadata.next_incremental()
        return True

    def handle_error(self, exc: BaseException) -> None:
        """The request failed (connection lost, timeout): the next request is full."""
        logger.info(
            "node %s: fetch in session %d failed (%s); next fetch is full",
            self.node,
            self.next_metadata.session_id,
            exc,
        )
        if self.enabled:
            self.next_metadata = self.next_metadata.next_close_existing_attempt_new()

    def close_metadata(self) -> FetchMetadata | None:
        """The metadata of a request closing the session, or None when there is none."""
        if not self.enabled or self.next_metadata.session_id == INVALID_SESSION_ID:
            return None
        return self.next_metadata.next_close_existing()

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic name of ``topic_id`` as known by this session."""
        return self.session_topic_names.get(topic_id)

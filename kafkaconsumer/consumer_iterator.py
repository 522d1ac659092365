"""What ``for record in consumer:`` has handed out of one poll (kafka-python's ``KafkaConsumer``
iterator, the old Scala client's ``ConsumerIterator``).

Iteration hands out a poll's records one at a time, while ``poll()`` already moved every
partition's position past all of them. When the application leaves the loop part-way (``break``,
an exception, the generator closed or collected), the records it never saw must not count as
consumed: the consumer moves those partitions back to their first record not handed out, and a
commit made meanwhile (``commit_sync()`` in the loop body, the auto-commit of ``close()``) covers
only what was handed out.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkaconsumer.record import ConsumerRecord
from kafkaconsumer.structs import ConsumerRecords, OffsetAndMetadata, TopicPartition

__all__ = ["IteratedBatch"]


class IteratedBatch:
    """One poll's records being handed out by iteration, and the last one handed out.

    ``polled`` is, per partition of the batch, the position ``poll()`` left it at: a partition
    whose position changed since (a seek, a reassignment) is the application's to place, and
    is not moved back.

    Thread-safety: used by the consumer's user thread only.
    """

    __slots__ = ("records", "polled", "last", "done")

    def __init__(self, records: ConsumerRecords, polled: Mapping[TopicPartition, int]) -> None:
        """Track ``records`` (one poll's result) whose partitions ``poll()`` left at ``polled``."""
        self.records = records
        self.polled = dict(polled)
        self.last: ConsumerRecord | None = None  # written by the iterating generator
        self.done = False  # every record handed out; written by the iterating generator

    def not_handed_out(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Per partition with records not handed out yet, the offset (and leader epoch) of the
        first of them: where that partition resumes, and what a commit now may cover."""
        if self.done:
            return {}
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        last = self.last
        past_last = last is None
        # Walks the records in the order iteration hands them out; runs once, when the loop
        # is left early or a commit happens mid-batch.
        for record in self.records:
            if past_last:
                tp = TopicPartition(record.topic, record.partition)
                if tp not in out:
                    out[tp] = OffsetAndMetadata(record.offset, "", record.leader_epoch)
            elif record is last:
                past_last = True
        return out

"""The share consumer's keys and :class:`ShareConsumerConfig` (Java ``ShareConsumerConfig``).

A share consumer takes the consumer's keys, plus the two share-group keys Java defines in
``ConsumerConfig`` (``share.acknowledgement.mode`` and ``share.acquire.mode``), and refuses the
consumer keys that mean nothing in a share group (where the broker owns assignment, offsets and
isolation), naming every one that was set, as Java's ``ShareConsumerConfig`` does.
"""

from __future__ import annotations

from kafkaconsumer.config.abstract_config import _finish
from kafkaconsumer.config.config_def import ConfigKey, M, T, _k, _OneOf
from kafkaconsumer.config.consumer_config import ConsumerConfig, consumer_keys
from kafkaconsumer.errors import ConfigError

__all__ = ["ShareConsumerConfig", "SHARE_GROUP_UNSUPPORTED_CONFIGS", "share_consumer_keys"]

#: Consumer keys a share consumer refuses (Java ``ShareConsumerConfig``'s list).
SHARE_GROUP_UNSUPPORTED_CONFIGS = (
    "auto.offset.reset",
    "enable.auto.commit",
    "group.instance.id",
    "isolation.level",
    "partition.assignment.strategy",
    "interceptor.classes",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "group.protocol",
    "group.remote.assignor",
)


def share_consumer_keys() -> list[ConfigKey]:
    """The keys of :class:`ShareConsumerConfig`: the consumer's and the share-group ones."""
    return consumer_keys() + [
        _k(
            "share.acknowledgement.mode",
            T.STRING,
            "implicit",
            "implicit: every record a poll() returned is accepted at the next poll() or commit; "
            "explicit: each record must be acknowledged with acknowledge() before the next "
            "poll().",
            M,
            _OneOf("implicit", "explicit"),
        ),
        _k(
            "share.acquire.mode",
            T.STRING,
            "batch_optimized",
            "batch_optimized: a poll() may return more than max.poll.records to keep whole "
            "batches; record_limit: never more than max.poll.records (KIP-1206).",
            M,
            _OneOf("batch_optimized", "record_limit"),
        ),
    ]


class ShareConsumerConfig(ConsumerConfig):
    """Configuration of :class:`~kafkaconsumer.share_consumer.KafkaShareConsumer`.

    ``group.id`` is required; the keys of :data:`SHARE_GROUP_UNSUPPORTED_CONFIGS` are refused.

    Thread-safety: immutable after construction; safe to share between threads.
    """

    def _post_process(self) -> None:
        refused = [k for k in SHARE_GROUP_UNSUPPORTED_CONFIGS if k in self._originals]
        if refused:
            raise ConfigError(
                f"a share consumer does not support these configurations: {', '.join(refused)}"
            )
        if not self._values["group.id"]:
            raise ConfigError("group.id must be set for a share consumer")
        super()._post_process()


_finish(ShareConsumerConfig, share_consumer_keys())

"""A coordinator stack (network client, metadata, subscription state, coordinator) for tests.

It wires the real classes together exactly as ``KafkaConsumer`` does, without the facade, so
the fake-broker tests exercise the coordinator over the real wire protocol.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from kafkaconsumer.config import CLASSIC_PROTOCOL_ONLY
from kafkaconsumer.internals.group.consumer_delegate_creator import consumer_member_class
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.listener import ConsumerRebalanceListener
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME
from kafkaconsumer.utils.timer import Timer
from tests.helpers import network_settings

#: Fast settings so that tests spend little time waiting for timers.
FAST = {
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 200,
    "max.poll.interval.ms": 10000,
    "retry.backoff.ms": 20,
    "reconnect.backoff.ms": 20,
    "reconnect.backoff.max.ms": 200,
    "request.timeout.ms": 5000,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "partition.assignment.strategy": ["range"],
    "metadata.max.age.ms": 60000,
}


@dataclass
class RecordingListener(ConsumerRebalanceListener):
    """Remembers every callback in order, as ``(name, sorted partitions)``."""

    calls: list[tuple[str, list[TopicPartition]]] = field(default_factory=list)
    raise_on: str | None = None

    def _record(self, name: str, partitions: Collection[TopicPartition]) -> None:
        self.calls.append((name, sorted(partitions)))
        if self.raise_on == name:
            raise RuntimeError(f"listener failure in {name}")

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        """Record the call."""
        self._record("revoked", revoked)

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        """Record the call."""
        self._record("assigned", assigned)

    def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        """Record the call."""
        self._record("lost", lost)

    def names(self) -> list[str]:
        """Just the callback names, in order."""
        return [name for name, _ in self.calls]


class Stack:
    """One consumer's group machinery against ``bootstrap``; close it after use."""

    def __init__(self, bootstrap: str, group_id: str, **overrides: Any) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": "test-" + group_id,
        }
        config.update(FAST)
        config.update({k.replace("_", "."): v for k, v in overrides.items()})
        if str(config.get("group.protocol", "classic")).lower() == "consumer":
            for key in CLASSIC_PROTOCOL_ONLY:  # the broker's under this protocol
                config.pop(key, None)
        self.config = config
        self.metadata = ConsumerMetadata(config)
        self.network = NetworkClient(network_settings(config), metadata=self.metadata)
        self.client = ConsumerNetworkClient(self.network, self.metadata)
        self.subscriptions = SubscriptionState(config.get("auto.offset.reset", "earliest"))
        # Either protocol's member, as KafkaConsumer picks it; each test knows which it made.
        self.coordinator: Any = consumer_member_class(config)(
            config, self.client, self.subscriptions, self.metadata
        )
        self.listener = RecordingListener()

    def subscribe(
        self, topics: list[str] | re.Pattern[str], listener: ConsumerRebalanceListener | None = None
    ) -> None:
        """Subscribe as KafkaConsumer.subscribe does."""
        lst = listener if listener is not None else self.listener
        if isinstance(topics, re.Pattern):
            self.subscriptions.subscribe_pattern(topics, lst)
            self.metadata.set_topics(None)
        else:
            self.subscriptions.subscribe(topics, lst)
            self.metadata.set_topics(topics)

    def timer(self, ms: int) -> Timer:
        """A real-clock timer."""
        return SYSTEM_TIME.timer(ms)

    def poll_until(self, condition: Any, timeout_ms: int = 10000, slice_ms: int = 100) -> None:
        """Call coordinator.poll (and the network) until ``condition()`` or the timeout."""
        outer = self.timer(timeout_ms)
        while not condition():
            if outer.is_expired():
                raise AssertionError(f"condition not met within {timeout_ms} ms")
            # As KafkaConsumer.poll: KIP-983 revocations due now complete first.
            self.coordinator.begin_poll()
            self.coordinator.poll(self.timer(min(slice_ms, max(1, outer.remaining_ms))))
            self.client.poll(timeout_ms=0)
            outer.update()

    def join(self, timeout_ms: int = 10000) -> None:
        """Poll until the member is in a stable generation with no rejoin pending."""
        self.poll_until(
            lambda: (
                self.coordinator.generation_if_stable() is not None
                and not self.coordinator.rejoin_needed_or_pending()
            ),
            timeout_ms,
        )

    def close(self, timeout_ms: int = 2000, leave_group: bool | None = None) -> None:
        """Close the coordinator, then the network."""
        try:
            self.coordinator.close(self.timer(timeout_ms), leave_group)
        finally:
            self.client.close()


class Driver(threading.Thread):
    """Polls one Stack in its own thread, as a consumer's poll loop would.

    Each round calls ``coordinator.begin_poll()`` (KIP-983), then ``coordinator.poll``; ``hook``
    runs after every round on this thread (it may call the coordinator). Errors are kept in
    :attr:`error`.
    """

    def __init__(self, stack: Stack, hook: Any = None, round_ms: int = 50) -> None:
        super().__init__(name=f"driver-{stack.config['client.id']}", daemon=True)
        self.stack = stack
        self.hook = hook
        self.round_ms = round_ms
        self.error: BaseException | None = None
        self.rounds = 0
        self._stopping = threading.Event()
        self.paused = threading.Event()

    def run(self) -> None:
        """Poll until stopped."""
        c = self.stack.coordinator
        try:
            while not self._stopping.is_set():
                if self.paused.is_set():
                    self._stopping.wait(0.02)
                    continue
                c.begin_poll()
                c.poll(self.stack.timer(self.round_ms))
                self.stack.client.poll(timeout_ms=10)
                self.rounds += 1
                if self.hook is not None:
                    self.hook(self.stack)
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        """Stop polling (the stack stays open)."""
        self._stopping.set()
        self.join(10)
        assert not self.is_alive(), "driver did not stop"

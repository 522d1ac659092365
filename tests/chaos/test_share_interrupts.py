"""Ctrl-C at any point of a KafkaShareConsumer's poll, commit or acknowledgement leaves a consumer
whose locks another thread can still take and that closes in time.

The interrupt walker of :mod:`tests.chaos.test_interrupts` (see :mod:`tests.support.interrupts`)
applied to the share consumer: a KeyboardInterrupt is raised at a sample of the interruptible
points of ``poll()`` (fetching, acknowledging on the way, firing the commit callback),
``commit_sync()`` and ``acknowledge()``, and after each the user's thread must hold none of the
share engine's locks (the member's, the share fetch manager's, the metadata's, the network
client's, the thread guard's lock), the heartbeat thread must still be able to take them, the
same thread and another one must still be able to call in (the single-thread guard was not left
owned), and ``close()`` must return within its timeout, on the interrupted thread or on another.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from kafkaconsumer import AcknowledgeType, KafkaShareConsumer
from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.protocol import ApiKey
from tests.helpers import unique_name
from tests.share.member import produce
from tests.support.interrupts import run_interrupted_at

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CLOSE_MS = 5000
# close() is bounded by its timeout; the slack covers a loaded CI machine, not a hang.
CLOSE_BOUND_S = CLOSE_MS / 1000 + 10


def _engine_locks(consumer: Any) -> dict[str, Any]:
    return {
        "member": consumer._member._lock,
        "share fetch": consumer._fetch._lock,
        "metadata": consumer._metadata._lock,
        "network": consumer._client._lock,
        "guard": consumer._guard._lock,
        **(
            {"telemetry": consumer._telemetry.sender._lock}
            if consumer._telemetry is not None
            else {}
        ),
    }


def _check_after_interrupt(consumer: Any, where: str) -> None:
    locks = _engine_locks(consumer)
    held = [n for n, lock in locks.items() if hasattr(lock, "_is_owned") and lock._is_owned()]
    assert not held, f"{where}: the interrupted thread still holds {held}"
    results: dict[str, bool] = {}

    def take() -> None:
        for name, lock in locks.items():
            ok = lock.acquire(timeout=10)
            results[name] = ok
            if ok:
                lock.release()

    t = threading.Thread(target=take)
    t.start()
    t.join(60)
    stuck = [n for n in locks if not results.get(n)]
    assert not stuck, f"{where}: another thread could not take {stuck}"
    consumer.subscription()
    raised = _on_other_thread(consumer.subscription)
    assert raised is None, f"{where}: another thread could not call in: {raised!r}"


def _on_other_thread(fn: Any) -> BaseException | None:
    raised: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            raised.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join(CLOSE_BOUND_S + 30)
    assert not t.is_alive()
    return raised[0] if raised else None


def _close_in_time(consumer: KafkaShareConsumer, where: str, elsewhere: bool = False) -> None:
    """Close on this thread, or on another one when ``elsewhere``."""
    start = time.monotonic()
    if elsewhere:
        raised = _on_other_thread(lambda: consumer.close(timeout_ms=CLOSE_MS))
        assert raised is None, f"{where}: close() on another thread raised {raised!r}"
    else:
        consumer.close(timeout_ms=CLOSE_MS)
    took = time.monotonic() - start
    assert took < CLOSE_BOUND_S, f"{where}: close() took {took:.1f} s"


@pytest.mark.parametrize("mode", ["implicit", "explicit"])
def test_interrupts_through_share_polls_commits_and_acknowledgements(
    broker: Any, mode: str
) -> None:
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    bootstrap = broker.bootstrap_servers
    topic, group = unique_name("intr-sh"), unique_name("intr-sh-g")
    with KafkaAdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics({topic: 1})
        admin.incremental_alter_configs(
            {ConfigResource("group", group): {"share.auto.offset.reset": "earliest"}}
        )
    produce(bootstrap, topic, 200)
    settled: list[Any] = []
    consumer = KafkaShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group},
        fetch_max_wait_ms=100,
        max_poll_records=10,
        share_acknowledgement_mode=mode,
    )
    consumer.set_acknowledgement_commit_callback(lambda o, e: settled.append((o, e)))
    consumer.subscribe([topic])
    rng = random.Random(13 if mode == "implicit" else 14)
    fired = 0

    def poll() -> None:
        consumer.poll(timeout_ms=20)

    def settle() -> None:
        # What the last poll delivered, also when an interrupt kept it from the caller.
        for tp, offset in list(consumer._delivered):
            consumer.acknowledge(tp.topic, tp.partition, offset, AcknowledgeType.ACCEPT)

    def commit() -> None:
        consumer.commit_sync(timeout_ms=5000)

    try:
        for i in range(60):
            if i % 20 == 19:
                produce(bootstrap, topic, 30)
            steps = [poll, commit] + ([settle] if mode == "explicit" else [])
            for step in steps:
                # Count the points of one call, then interrupt the next one somewhere.
                if mode == "explicit":
                    settle()
                _, points, _ = run_interrupted_at(step, 0)
                if mode == "explicit":
                    settle()
                at = rng.randint(1, max(1, points))
                interrupted, _, where = run_interrupted_at(step, at)
                fired += interrupted
                _check_after_interrupt(consumer, f"{step.__name__} interrupted at {at}, {where}")
        # Interrupted calls never break the next ones.
        if mode == "explicit":
            settle()
        consumer.poll(timeout_ms=100)
    finally:
        # Java lets any thread close a consumer no thread is inside.
        _close_in_time(consumer, "after the interrupted calls", elsewhere=mode == "explicit")
    assert fired > 60, fired

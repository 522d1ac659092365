"""A group member in a process of its own, for tests that kill it (SIGKILL) without a leave.

Run as ``python -m tests.group.member_process BOOTSTRAP GROUP TOPIC PROTOCOL``: it subscribes
to TOPIC with ``group.protocol=PROTOCOL`` and polls until killed (or for at most five minutes,
should the test die first), printing its assignment as one JSON line (a sorted list of
partitions) each time it changes.
"""

from __future__ import annotations

import json
import sys
import time

from kafkaconsumer.config import CLASSIC_PROTOCOL_ONLY
from kafkaconsumer.consumer import KafkaConsumer
from tests.group.members import FAST_GROUP
from tests.support.broker_limits import session_timeout_ms


def main(argv: list[str]) -> None:
    """Poll forever (bounded by the test that kills it), reporting assignment changes."""
    bootstrap, group, topic, protocol = argv
    settings = dict(FAST_GROUP)
    settings.update({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol})
    # A cluster of one's own may refuse the short session (group.min.session.timeout.ms).
    settings["session.timeout.ms"] = session_timeout_ms(bootstrap, settings["session.timeout.ms"])
    if protocol == "consumer":
        # The broker owns these timers under the consumer protocol.
        for key in CLASSIC_PROTOCOL_ONLY:
            settings.pop(key, None)
    consumer = KafkaConsumer(settings)
    consumer.subscribe([topic])
    reported: list[int] | None = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        consumer.poll(100)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != reported:
            reported = now
            print(json.dumps(now), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

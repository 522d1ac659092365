"""A consumer in a process of its own, for measuring the whole process's CPU time while its
cluster is unreachable (``test_network_faults.test_cut_off_process_does_not_spin``).

::

    python -m tests.chaos.cut_off_child BOOTSTRAP TOPIC (--group GROUP | --assign)

It subscribes (a group member: heartbeat thread and all) or assigns every partition of
``TOPIC``, polls until it has consumed a record, prints ``consuming`` on stdout, then goes on
polling, as an application would, until its stdin closes; then it closes the consumer and
prints ``closed``. Its log (WARNING and above) goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import KafkaError
from kafkaconsumer.structs import TopicPartition


def main() -> None:
    """Run the consumer (see the module docstring)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--group")
    how.add_argument("--assign", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        request_timeout_ms=2000,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=1000,
    )
    stdin_closed = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()
        stdin_closed.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    if args.assign:
        infos = consumer.partitions_for(args.topic, timeout_ms=30_000)
        consumer.assign([TopicPartition(args.topic, i.partition) for i in infos])
    else:
        consumer.subscribe([args.topic])
    said = False
    deadline = time.monotonic() + 120  # bounded even if the parent forgets us
    while not stdin_closed.is_set() and time.monotonic() < deadline:
        try:
            n = consumer.poll(timeout_ms=200).count()
        except KafkaError as exc:  # an application logs and goes on
            logging.getLogger("cut_off_child").warning("poll: %r", exc)
            continue
        if n and not said:
            print("consuming", flush=True)
            said = True
    consumer.close(timeout_ms=2000)
    print("closed", flush=True)


if __name__ == "__main__":
    main()

"""``kafkaconsumer share``: the console share consumer (Java ``kafka-console-share-consumer.sh``).

It joins a share group, prints each record it acquires and settles it with ``--ack-type``:
``accept`` (the default: the record is done), ``release`` (the broker delivers it again, to this
or another member, with a higher delivery count) or ``reject`` (archived, never delivered
again). Acknowledgement is explicit, one record at a time, so a record is settled only once it
has been printed; records acquired but not printed (past ``--max-messages``, or after Ctrl-C)
are released for another member.

Where a share group starts reading is the group's ``share.auto.offset.reset`` configuration
(``latest`` unless set), not a client option; ``--group-start`` sets that group configuration
(``earliest``, ``latest`` or ``by_duration:<ISO-8601 duration>``, KIP-1106) before joining.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from ._common import (
    CommandError,
    add_connection_args,
    add_output_args,
    check_output_args,
    client_config,
)
from .consume import RecordFormatter, _PipeWatch

if TYPE_CHECKING:
    from kafkaconsumer.internals.fetch.share_completed_fetch import ShareConsumerRecord

__all__ = ["add_parser", "run", "DEFAULT_GROUP"]

#: The share group joined without ``--group`` (the name Java's tool uses).
DEFAULT_GROUP = "console-share-consumer"


def add_parser(sub: Any) -> None:
    """Register the ``share`` command."""
    p = sub.add_parser(
        "share",
        help="print records as a share-group member (console share consumer)",
        description="Join a share group, print the records it hands this member, one per "
        "line, and accept, release or reject each one once printed.",
    )
    add_connection_args(p)
    p.add_argument(
        "--topic",
        action="append",
        required=True,
        metavar="TOPIC",
        help="topic to read (repeatable)",
    )
    p.add_argument(
        "--group",
        default=DEFAULT_GROUP,
        metavar="GROUP",
        help=f"the share group to join (default: {DEFAULT_GROUP})",
    )
    p.add_argument(
        "--ack-type",
        choices=("accept", "release", "reject"),
        default="accept",
        help="how each printed record is acknowledged: accept (done), release (deliver it "
        "again) or reject (never deliver it again) (default: accept)",
    )
    p.add_argument(
        "--group-start",
        metavar="STRATEGY",
        help="first set the group's share.auto.offset.reset (where a share group without "
        "state starts): earliest, latest or by_duration:<ISO-8601 duration>, e.g. "
        "by_duration:PT1H",
    )
    add_output_args(p)
    p.add_argument(
        "--print-delivery-count",
        action="store_true",
        help="include how many times the broker has delivered the record (text and json formats)",
    )
    p.set_defaults(run=run)


def _check(args: argparse.Namespace) -> None:
    check_output_args(args)
    if any(not t for t in args.topic):
        raise CommandError("--topic must not be empty")
    if args.group_start is not None:
        from kafkaconsumer.config.auto_offset_reset import share_auto_offset_reset_error

        problem = share_auto_offset_reset_error(args.group_start)
        if problem is not None:
            raise CommandError(f"--group-start: {problem}")


def _set_group_start(args: argparse.Namespace) -> None:
    """Set the group's ``share.auto.offset.reset`` to ``--group-start`` (IncrementalAlterConfigs
    on the GROUP resource; the broker checks it too)."""
    from kafkaconsumer.admin import ConfigResource, KafkaAdminClient

    config = client_config(args)
    config.setdefault("default.api.timeout.ms", "15000")
    with KafkaAdminClient(config) as admin:
        admin.incremental_alter_configs(
            {ConfigResource("group", args.group): {"share.auto.offset.reset": args.group_start}}
        )


def _share_config(args: argparse.Namespace) -> dict[str, Any]:
    config = client_config(args)
    config["group.id"] = args.group
    # Each record is settled as it is printed, with the type asked for.
    config["share.acknowledgement.mode"] = "explicit"
    config.setdefault("client.id", "kafkaconsumer-console-share")
    # Bounds the metadata lookup at start, so an unreachable cluster ends in an error.
    config.setdefault("default.api.timeout.ms", "15000")
    return config


def run(args: argparse.Namespace, out: BinaryIO | None = None) -> int:
    """Consume, print and acknowledge until ``--max-messages``, ``--timeout-ms`` or Ctrl-C."""
    from kafkaconsumer import AcknowledgeType, KafkaShareConsumer

    _check(args)
    stream = out or sys.stdout.buffer
    formatter = RecordFormatter(
        args.format,
        args.print_key,
        args.print_headers,
        args.print_timestamp,
        args.print_partition,
        args.print_offset,
        delivery_count=args.print_delivery_count,
    )
    ack_type = AcknowledgeType[args.ack_type.upper()]
    if args.group_start is not None:
        _set_group_start(args)
    config = _share_config(args)
    consumer = KafkaShareConsumer(config)
    pipe = _PipeWatch(stream)
    # Ctrl-C only sets a flag, checked between records and polls, so a printed record is
    # always acknowledged; a second Ctrl-C interrupts at once.
    interrupted = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()

    previous = (
        signal.signal(signal.SIGINT, on_sigint)
        if threading.current_thread() is threading.main_thread()
        else None
    )
    printed = 0
    try:
        consumer.subscribe(args.topic)
        last_record = time.monotonic()
        while (
            args.max_messages is None or printed < args.max_messages
        ) and not interrupted.is_set():
            wait_ms = 1000
            if args.timeout_ms is not None:
                left = args.timeout_ms - (time.monotonic() - last_record) * 1000
                if left <= 0:
                    break
                wait_ms = int(min(wait_ms, max(1, left)))
            if pipe.closed():
                raise BrokenPipeError("the reader of the output went away")
            # A share consumer's poll() hands out ShareConsumerRecords.
            records = cast("list[ShareConsumerRecord]", list(consumer.poll(timeout_ms=wait_ms)))
            if records:
                last_record = time.monotonic()
            done = 0
            try:
                for record in records:
                    if (
                        args.max_messages is not None and printed >= args.max_messages
                    ) or interrupted.is_set():
                        break
                    stream.write(formatter.format(record))
                    stream.flush()
                    printed += 1
                    consumer.acknowledge(record, ack_type)
                    done += 1
            finally:
                # What was acquired but not printed goes back for another member.
                for record in records[done:]:
                    consumer.acknowledge(record, AcknowledgeType.RELEASE)
    except KeyboardInterrupt:
        pass  # a second Ctrl-C: the close below still sends the acknowledgements
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        consumer.close(timeout_ms=10_000)
        sys.stderr.write(f"Processed a total of {printed} messages\n")
        sys.stderr.flush()
    return 0

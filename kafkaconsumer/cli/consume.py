"""``kafkaconsumer consume``: the console consumer (Java ``kafka-console-consumer.sh``).

With ``--group`` it subscribes as a member of that group and commits what it printed; without
one it assigns itself every partition of the topics (no group, no commits). Each record is
written and flushed as it arrives; a closed pipe ends the command quietly.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import select
import signal
import stat
import sys
import threading
import time
from typing import Any, BinaryIO

from ._common import (
    CommandError,
    add_connection_args,
    add_output_args,
    check_output_args,
    client_config,
)

__all__ = ["add_parser", "run", "RecordFormatter"]

#: Java ``DefaultMessageFormatter`` names the timestamp by its type.
_TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


def add_parser(sub: Any) -> None:
    """Register the ``consume`` command."""
    p = sub.add_parser(
        "consume",
        help="print records from topics (console consumer)",
        description="Print records from one or more topics, one per line, as they arrive.",
    )
    add_connection_args(p)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--topic", action="append", metavar="TOPIC", help="topic to read (repeatable)"
    )
    what.add_argument(
        "--pattern",
        metavar="REGEX",
        help="read every topic whose whole name matches this regular expression",
    )
    p.add_argument(
        "--group",
        metavar="GROUP",
        help="consume as a member of this group and commit what was printed "
        "(default: no group, read every partition, commit nothing)",
    )
    p.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at the earliest offset when there is no committed one "
        "(default: only new records)",
    )
    p.add_argument(
        "--partition", type=int, metavar="N", help="read only this partition of the one --topic"
    )
    p.add_argument(
        "--offset",
        default=None,
        metavar="OFFSET",
        help="with --partition: earliest, latest or an offset number "
        "(default: latest, or earliest with --from-beginning)",
    )
    add_output_args(p)
    p.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        help="read_committed hides records of aborted and open transactions "
        "(default: read_uncommitted)",
    )
    p.set_defaults(run=run)


class RecordFormatter:
    """Turns a record into the bytes of one output line, as ``--format`` and the ``--print-*``
    options ask."""

    def __init__(
        self,
        fmt: str,
        key: bool = False,
        headers: bool = False,
        timestamp: bool = False,
        partition: bool = False,
        offset: bool = False,
        delivery_count: bool = False,
    ) -> None:
        """Choose the format (text, json, raw) and the optional fields (``delivery_count``:
        records of a share group only)."""
        self.fmt = fmt
        self.key, self.headers, self.timestamp = key, headers, timestamp
        self.partition, self.offset = partition, offset
        self.delivery_count = delivery_count

    @staticmethod
    def _text(data: bytes | None) -> str:
        return "null" if data is None else data.decode("utf-8", "replace")

    def format(self, record: Any) -> bytes:
        """The line for ``record`` (ending in a newline)."""
        if self.fmt == "raw":
            return (record.value or b"") + b"\n"
        if self.fmt == "json":
            return (json.dumps(self._json(record), ensure_ascii=False) + "\n").encode()
        fields: list[str] = []
        if self.timestamp:
            kind = _TIMESTAMP_TYPES.get(record.timestamp_type)
            fields.append(f"{kind}:{record.timestamp}" if kind else "NO_TIMESTAMP")
        if self.partition:
            fields.append(f"Partition:{record.partition}")
        if self.offset:
            fields.append(f"Offset:{record.offset}")
        if self.delivery_count:
            fields.append(f"DeliveryCount:{record.delivery_count}")
        if self.headers:
            headers = record.headers
            fields.append(
                ",".join(f"{k}:{self._text(v)}" for k, v in headers) if headers else "NO_HEADERS"
            )
        if self.key:
            fields.append(self._text(record.key))
        fields.append(self._text(record.value))
        return ("\t".join(fields) + "\n").encode("utf-8")

    @staticmethod
    def _json_bytes(data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(data).decode("ascii")}

    def _json(self, record: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"topic": record.topic}
        if self.partition:
            out["partition"] = record.partition
        if self.offset:
            out["offset"] = record.offset
        if self.delivery_count:
            out["delivery_count"] = record.delivery_count
        if self.timestamp:
            out["timestamp"] = record.timestamp
            out["timestamp_type"] = _TIMESTAMP_TYPES.get(record.timestamp_type)
        if self.headers:
            out["headers"] = [[k, self._json_bytes(v)] for k, v in record.headers]
        if self.key:
            out["key"] = self._json_bytes(record.key)
        out["value"] = self._json_bytes(record.value)
        return out


def _consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    config = client_config(args)
    if args.group:
        config["group.id"] = args.group
    config.setdefault("auto.offset.reset", "earliest" if args.from_beginning else "latest")
    if args.isolation_level:
        config["isolation.level"] = args.isolation_level
    # We commit exactly what was printed, so the automatic commit of everything polled
    # (which could include records --max-messages left unprinted) stays off unless asked for.
    config.setdefault("enable.auto.commit", "false")
    config.setdefault("client.id", "kafkaconsumer-console")
    # Bounds the metadata lookups at start, so an unreachable cluster ends in an error.
    config.setdefault("default.api.timeout.ms", "15000")
    return config


class _PipeWatch:
    """Notices that the reader of a pipe on our output went away (``| head``) while no
    records arrive: the write end of such a pipe reports an error condition to poll()."""

    def __init__(self, stream: BinaryIO) -> None:
        self._poller: Any = None
        try:
            fd = stream.fileno()
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and hasattr(select, "poll"):
                self._poller = select.poll()
                self._poller.register(fd, 0)  # only the always-reported POLLERR/POLLHUP
        except (OSError, ValueError, AttributeError):
            self._poller = None  # not a real file (tests), or no poll(): writes tell us

    def closed(self) -> bool:
        """True once the pipe's reader has gone."""
        return bool(self._poller is not None and self._poller.poll(0))


def _check(args: argparse.Namespace) -> None:
    if args.partition is not None:
        if not args.topic or len(args.topic) != 1:
            raise CommandError("--partition needs exactly one --topic")
        if args.group:
            raise CommandError("--partition reads one partition without a group; leave out --group")
    if args.offset is not None and args.partition is None:
        raise CommandError("--offset needs --partition")
    if args.offset is not None and args.offset not in ("earliest", "latest"):
        try:
            if int(args.offset) < 0:
                raise ValueError
        except ValueError:
            raise CommandError(
                f"--offset must be earliest, latest or an offset >= 0, got {args.offset!r}"
            ) from None
    check_output_args(args)
    if args.pattern is not None:
        try:
            re.compile(args.pattern)
        except re.error as exc:
            raise CommandError(f"--pattern is not a regular expression: {exc}") from None


def _assign(consumer: Any, args: argparse.Namespace) -> None:
    """Without a group: take every partition of the topics (or one partition) and seek."""
    from kafkaconsumer.structs import TopicPartition

    if args.partition is not None:
        tps = [TopicPartition(args.topic[0], args.partition)]
        known = {p.partition for p in consumer.partitions_for(args.topic[0])}
        if args.partition not in known:
            raise CommandError(
                f"topic {args.topic[0]!r} has no partition {args.partition} (it has {len(known)})"
            )
    else:
        if args.pattern is not None:
            regex = re.compile(args.pattern)
            topics = sorted(t for t in consumer.list_topics() if regex.fullmatch(t))
            if not topics:
                raise CommandError(f"no topic matches {args.pattern!r}")
        else:
            topics = args.topic
        tps = [TopicPartition(t, p.partition) for t in topics for p in consumer.partitions_for(t)]
    consumer.assign(tps)
    where = args.offset or ("earliest" if args.from_beginning else "latest")
    if where == "earliest":
        consumer.seek_to_beginning(tps)
    elif where == "latest":
        consumer.seek_to_end(tps)
    else:
        for tp in tps:
            consumer.seek(tp, int(where))


def run(args: argparse.Namespace, out: BinaryIO | None = None) -> int:
    """Consume and print until ``--max-messages``, ``--timeout-ms`` or Ctrl-C."""
    from kafkaconsumer.consumer import KafkaConsumer
    from kafkaconsumer.structs import OffsetAndMetadata, TopicPartition

    _check(args)
    stream = out or sys.stdout.buffer
    formatter = RecordFormatter(
        args.format,
        args.print_key,
        args.print_headers,
        args.print_timestamp,
        args.print_partition,
        args.print_offset,
    )
    config = _consumer_config(args)
    consumer = KafkaConsumer(config)
    pipe = _PipeWatch(stream)
    # Ctrl-C only sets a flag, checked between records and polls (at most one poll timeout
    # away), so a record is never printed without its offset being committed; a second
    # Ctrl-C interrupts at once.
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
    to_commit: dict[TopicPartition, OffsetAndMetadata] = {}
    try:
        # Fails with a timeout error when no broker answers, instead of polling forever.
        consumer.list_topics(timeout_ms=int(config["default.api.timeout.ms"]))
        if args.group:
            consumer.subscribe(re.compile(args.pattern) if args.pattern else args.topic)
        else:
            _assign(consumer, args)
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
            records = consumer.poll(timeout_ms=wait_ms)
            if records:
                last_record = time.monotonic()
            for record in records:
                stream.write(formatter.format(record))
                stream.flush()
                printed += 1
                to_commit[TopicPartition(record.topic, record.partition)] = OffsetAndMetadata(
                    record.offset + 1
                )
                if (
                    args.max_messages is not None
                    and printed >= args.max_messages
                    or interrupted.is_set()
                ):
                    break
            if args.group and to_commit and records:
                consumer.commit_async(dict(to_commit))
    except KeyboardInterrupt:
        pass  # a second Ctrl-C: fall through to the final commit and a clean close
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        try:
            if args.group and to_commit:
                consumer.commit_sync(to_commit, timeout_ms=10_000)
        finally:
            consumer.close(timeout_ms=10_000)
            sys.stderr.write(f"Processed a total of {printed} messages\n")
            sys.stderr.flush()
    return 0

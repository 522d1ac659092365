"""Shared pieces of the ``kafkaconsumer`` commands: client settings from the command line,
Java ``.properties`` files, and table or JSON output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

__all__ = [
    "CommandError",
    "add_connection_args",
    "add_admin_args",
    "add_output_args",
    "check_output_args",
    "admin_client",
    "client_config",
    "read_properties",
    "parse_property",
    "print_table",
    "print_json",
]

#: The environment variable the commands read when ``--bootstrap-server`` is not given.
BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"


class CommandError(Exception):
    """A problem with what the user asked for: printed as one line, exit status 2."""


def add_connection_args(parser: argparse.ArgumentParser) -> None:
    """Options every command that talks to a cluster has."""
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help=f"the cluster to connect to (comma-separated list; default: ${BOOTSTRAP_ENV})",
    )
    parser.add_argument(
        "--command-config",
        "--config-file",
        dest="config_file",
        metavar="FILE",
        help="client settings in Java .properties format (security.protocol, sasl.*, ssl.*, ...)",
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a client configuration key (Java name, e.g. fetch.max.bytes=1048576); "
        "repeatable; wins over --config-file",
    )


def add_output_args(parser: argparse.ArgumentParser) -> None:
    """Options of the commands that print records: when to stop, and how each record is
    written (``--format`` and the ``--print-*`` fields)."""
    parser.add_argument(
        "--max-messages", type=int, metavar="N", help="stop after printing N records"
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        metavar="MS",
        help="stop when no record arrived for this long (default: run until interrupted)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "raw"),
        default="text",
        help="text: tab-separated fields and the value; json: one object per "
        "line; raw: the value bytes unchanged, newline-terminated "
        "(default: text)",
    )
    for field in ("key", "headers", "timestamp", "partition", "offset"):
        parser.add_argument(
            f"--print-{field}",
            action="store_true",
            help=f"include the record's {field} (text and json formats)",
        )


def check_output_args(args: argparse.Namespace) -> None:
    """Refuse stop conditions that cannot be met, before anything connects."""
    if args.max_messages is not None and args.max_messages < 1:
        raise CommandError("--max-messages must be at least 1")
    if args.timeout_ms is not None and args.timeout_ms < 0:
        raise CommandError("--timeout-ms must not be negative")


def add_admin_args(parser: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """Options of the commands that ask the cluster through the admin client: the connection,
    ``--json`` (unless the command prints nothing to parse) and ``--timeout-ms``."""
    add_connection_args(parser)
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=15_000,
        metavar="MS",
        help="give up when the cluster has not answered within this time (default: 15000)",
    )


def admin_client(args: argparse.Namespace) -> Any:
    """A :class:`~kafkaconsumer.admin.KafkaAdminClient` for the command line's cluster, whose
    calls give up after ``--timeout-ms``."""
    from kafkaconsumer.admin import KafkaAdminClient
    from kafkaconsumer.config import config_default

    config = client_config(args)
    config.setdefault("default.api.timeout.ms", args.timeout_ms)
    # A single request never outlives the command's own limit; the default comes from the keys.
    config.setdefault(
        "request.timeout.ms", min(config_default("request.timeout.ms"), args.timeout_ms)
    )
    return KafkaAdminClient(config)


def parse_property(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as a pair; raises :class:`CommandError` without an ``=``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise CommandError(f"--property expects KEY=VALUE, got {text!r}")
    return key.strip(), value


def read_properties(path: str) -> dict[str, str]:
    """Read a Java ``.properties`` file: ``key=value`` or ``key: value`` lines, ``#`` and ``!``
    comments, a trailing backslash continues a line. Its ``${provider:path:key}`` placeholders
    (``config.providers``) are resolved when the client is built from it."""
    from kafkaconsumer.config.config_provider import parse_properties

    try:
        with open(path, encoding="utf-8") as f:
            return parse_properties(f.read())
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc


def client_config(args: argparse.Namespace) -> dict[str, Any]:
    """The client configuration the command line describes: the config file, then
    ``--property`` pairs, then ``--bootstrap-server`` (or the environment)."""
    config: dict[str, Any] = {}
    if getattr(args, "config_file", None):
        config.update(read_properties(args.config_file))
    for prop in getattr(args, "property", None) or []:
        key, value = parse_property(prop)
        config[key] = value
    bootstrap = getattr(args, "bootstrap_server", None) or (
        None if "bootstrap.servers" in config else os.environ.get(BOOTSTRAP_ENV)
    )
    if bootstrap:
        config["bootstrap.servers"] = bootstrap
    if not config.get("bootstrap.servers"):
        raise CommandError(
            f"no cluster given: pass --bootstrap-server HOST:PORT (or set ${BOOTSTRAP_ENV})"
        )
    return config


def print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    out: TextIO | None = None,
) -> None:
    """A table for people (rich); None cells print as ``-``."""
    from rich.console import Console
    from rich.table import Table

    stream = out or sys.stdout
    # A pipe gets plain text at a generous width rather than 80 columns of folded cells.
    console = Console(
        file=stream, width=None if stream.isatty() else 200, highlight=False, soft_wrap=False
    )
    if title:
        console.print(title, markup=False, soft_wrap=True)
    if not columns:
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    console.print(table)


def print_json(value: Any, out: TextIO | None = None) -> None:
    """One JSON document for scripts."""
    stream = out or sys.stdout
    json.dump(value, stream, indent=2, sort_keys=False, default=_jsonable)
    stream.write("\n")
    stream.flush()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)

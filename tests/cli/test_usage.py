"""The command line without a cluster: help, bad arguments, an unreachable cluster, and the
pure helpers (properties files, durations, record formatting)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.cli import build_parser
from kafkaconsumer.cli._common import CommandError, client_config, read_properties
from kafkaconsumer.cli.consume import RecordFormatter
from kafkaconsumer.cli.groups import parse_datetime_ms, parse_duration_ms
from kafkaconsumer.internals.fetch.share_completed_fetch import ShareConsumerRecord
from kafkaconsumer.record import ConsumerRecord, _pyrecords

pytestmark = pytest.mark.timeout(60)


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_python_dash_m_help_is_plain_text(cli: Any) -> None:
    run = cli("--help")
    assert run.code == 0
    for command in ("demo", "consume", "share", "groups", "topics"):
        assert command in run.out
    # No reStructuredText roles or literals leak into the help.
    assert ":class:" not in run.out and "``" not in run.out


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found.extend(_all_parsers(child))
    return found


def test_every_option_and_command_has_help() -> None:
    for parser in _all_parsers(build_parser()):
        assert parser.description or parser.prog == "kafkaconsumer", parser.prog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, (parser.prog, choice.dest)
                continue
            assert action.help, (parser.prog, action.option_strings or action.dest)
            text = str(action.help)
            assert ":class:" not in text and "``" not in text, (parser.prog, text)


def test_bad_arguments_give_one_line_and_status_2(cli: Any) -> None:
    run = cli("consume", "--topic", "t")  # no cluster named anywhere
    assert run.code == 2
    _no_traceback(run.err)
    assert "--bootstrap-server" in run.err
    run = cli("consume", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--offset", "5")
    assert run.code == 2
    _no_traceback(run.err)
    assert "--offset needs --partition" in run.err
    run = cli("share", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--max-messages", "0")
    assert run.code == 2
    _no_traceback(run.err)
    assert "--max-messages" in run.err
    run = cli("share", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--ack-type", "renew")
    assert run.code == 2
    assert "--ack-type" in run.err
    run = cli(
        "groups",
        "reset-offsets",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--group",
        "g",
        "--all-topics",
        "--by-duration",
        "ten minutes",
    )
    assert run.code == 2
    _no_traceback(run.err)
    run = cli(
        "consume",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--topic",
        "t",
        "--property",
        "fetch.max.bytes=lots",
    )
    assert run.code == 2
    _no_traceback(run.err)
    assert "fetch.max.bytes" in run.err


def test_unreachable_cluster_gives_one_line_and_status_1(cli: Any) -> None:
    run = cli("topics", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout-ms", "1500")
    assert run.code == 1
    _no_traceback(run.err)
    assert "127.0.0.1:1" in run.err
    run = cli(
        "consume",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--topic",
        "t",
        "--group",
        "g",
        "--property",
        "default.api.timeout.ms=1500",
    )
    assert run.code == 1
    assert "Traceback" not in run.err
    assert "127.0.0.1:1" in run.err


def test_properties_file_and_property_flags(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# a comment\n! another\nbootstrap.servers=h1:9092\n"
        "sasl.jaas.config = a \\\n  b\nclient.id: from-file\n\n"
    )
    assert read_properties(str(path)) == {
        "bootstrap.servers": "h1:9092",
        "sasl.jaas.config": "a b",
        "client.id": "from-file",
    }
    args = argparse.Namespace(
        config_file=str(path), property=["client.id=flag"], bootstrap_server=None
    )
    assert client_config(args) == {
        "bootstrap.servers": "h1:9092",
        "sasl.jaas.config": "a b",
        "client.id": "flag",
    }
    with pytest.raises(CommandError):
        read_properties(str(tmp_path / "missing.properties"))


def test_durations_and_datetimes() -> None:
    assert parse_duration_ms("PT10M") == 600_000
    assert parse_duration_ms("P1DT2H3M4.5S") == ((24 + 2) * 3600 + 3 * 60 + 4.5) * 1000
    assert parse_duration_ms("-PT1S") == -1000
    for bad in ("10m", "P", "PT", "P1DT"):
        with pytest.raises(CommandError):
            parse_duration_ms(bad)
    assert parse_datetime_ms("1970-01-01T00:00:01Z") == 1000
    assert parse_datetime_ms("1970-01-01T01:00:01+01:00") == 1000
    with pytest.raises(CommandError):
        parse_datetime_ms("yesterday")


def _record(key: bytes | None, value: bytes | None, headers: Any = None) -> ConsumerRecord:
    # The pure-Python class: the public name is a protocol to type checkers.
    return _pyrecords.ConsumerRecord("t", 1, 7, 1234, 0, key, value, headers, None, -1, -1)


def test_record_formats() -> None:
    record = _record(b"k", b"v\xff", [("h", b"x"), ("n", None)])
    every = {"key": True, "headers": True, "timestamp": True, "partition": True, "offset": True}
    assert (
        RecordFormatter("text", **every).format(record)
        == "CreateTime:1234\tPartition:1\tOffset:7\th:x,n:null\tk\tv\ufffd\n".encode()
    )
    assert RecordFormatter("text").format(_record(None, None)) == b"null\n"
    shared = ShareConsumerRecord(_record(b"k", b"v"), 3)
    assert (
        RecordFormatter("text", offset=True, delivery_count=True).format(shared)
        == b"Offset:7\tDeliveryCount:3\tv\n"
    )
    assert b'"delivery_count": 3' in RecordFormatter("json", delivery_count=True).format(shared)
    assert (
        RecordFormatter("text", headers=True, key=True).format(_record(None, b"v"))
        == b"NO_HEADERS\tnull\tv\n"
    )
    assert RecordFormatter("raw", **every).format(record) == b"v\xff\n"
    assert RecordFormatter("json", **every).format(record) == (
        b'{"topic": "t", "partition": 1, "offset": 7, "timestamp": 1234, '
        b'"timestamp_type": "CreateTime", "headers": [["h", "x"], ["n", null]], "key": "k", '
        b'"value": {"base64": "dv8="}}\n'
    )

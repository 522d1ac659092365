"""``kafkaconsumer share --group-start``: the share group's ``share.auto.offset.reset`` values a
4.4 broker takes (``earliest``, ``latest``, ``by_duration:<duration>``, KIP-1106), bad ones
refused before the cluster is asked, with the broker's (Java's) message."""

from __future__ import annotations

from typing import Any

import pytest

from kafkaconsumer.config.auto_offset_reset import share_auto_offset_reset_error

JAVA = (
    "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
)


@pytest.mark.parametrize("value", ["earliest", "latest", "by_duration:PT1H", "by_duration:P1DT2H"])
def test_values_a_share_group_takes(value: str) -> None:
    assert share_auto_offset_reset_error(value) is None


@pytest.mark.parametrize(
    ("value", "cause"),
    [
        ("none", "Unsupported strategy for ShareGroup: NONE"),
        ("by_duration", "<:duration> part is missing"),
        ("by_duration:-PT1H", "Negative duration is not supported"),
        ("by_duration:1H", "Unable to parse duration string"),
        ("soon", "Unknown auto offset reset strategy: soon"),
    ],
)
def test_values_refused_with_the_brokers_message(value: str, cause: str) -> None:
    problem = share_auto_offset_reset_error(value)
    assert problem is not None
    assert problem.startswith(f"Invalid value `{value}` for configuration share.auto.offset.reset.")
    assert JAVA in problem and cause in problem


def test_the_command_refuses_a_bad_start_before_connecting(cli: Any) -> None:
    run = cli(
        "share",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--topic",
        "t",
        "--group-start",
        "by_duration:-PT5M",
    )
    assert run.code == 2
    assert "Traceback" not in run.err
    assert "--group-start: Invalid value `by_duration:-PT5M`" in run.err
    assert "Negative duration is not supported" in run.err

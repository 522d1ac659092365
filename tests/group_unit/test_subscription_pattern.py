"""How a ``re`` subscription pattern maps to the broker-side regex (RE2) of KIP-848."""

from __future__ import annotations

import re

import pytest

from kafkaconsumer.internals.subscription_pattern import INTERNAL_TOPICS, to_broker_regex

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize(
    ("source", "flags", "sent"),
    [
        (r"orders-.*", 0, r"orders-.*"),
        (r"orders\.(eu|us)-\d{1,3}", 0, r"orders\.(eu|us)-\d{1,3}"),
        (r"(?P<region>[a-z]+)_events", 0, r"(?P<region>[a-z]+)_events"),
        (r"\Aorders[^.]*?$", 0, r"\Aorders[^.]*?$"),
        (r"orders", re.IGNORECASE, r"(?i)orders"),
        (r"orders.*", re.IGNORECASE | re.DOTALL, r"(?is)orders.*"),
    ],
)
def test_patterns_both_dialects_read_alike_are_sent(source: str, flags: int, sent: str) -> None:
    assert to_broker_regex(re.compile(source, flags)) == (sent, None)


@pytest.mark.parametrize(
    ("source", "flags", "why"),
    [
        (r"(a)\1", 0, r"\1"),
        (r"(?P<t>a)(?P=t)", 0, "back-reference"),
        (r"orders(?=-eu)", 0, "look-ahead"),
        (r"(?<!test-)orders", 0, "look-behind"),
        (r"(a)?(?(1)b|c)", 0, "conditional"),
        (r"(?>orders)", 0, "atomic"),
        (r"orders.*+", 0, "possessive"),
        (r"orders\Z", 0, r"\Z"),
        (r"o{,3}", 0, "{,n}"),
        (r"orders # comment", re.VERBOSE, "VERBOSE"),
        (r"(?a)orders", 0, "inline flags"),
        (r"orders(?#why)", 0, "comment"),
        (r"[[:alpha:]]+", 0, "[:"),
        (r"\u006frders", 0, r"\u"),
        ("", 0, "empty"),
    ],
)
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
def test_patterns_re2_cannot_read_stay_on_the_client(source: str, flags: int, why: str) -> None:
    regex, reason = to_broker_regex(re.compile(source, flags))
    assert regex is None
    assert reason is not None and why in reason


def test_a_pattern_matching_internal_topics_stays_on_the_client() -> None:
    # The broker matches internal topics too; the client leaves them out by default.
    regex, reason = to_broker_regex(re.compile(r".*"), INTERNAL_TOPICS)
    assert regex is None and reason is not None and "__consumer_offsets" in reason
    assert to_broker_regex(re.compile(r"[a-z].*"), INTERNAL_TOPICS) == ("[a-z].*", None)

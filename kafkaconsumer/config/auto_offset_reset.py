"""``auto.offset.reset`` values, ``by_duration:<ISO-8601 duration>`` (KIP-1106) included (Java
``AutoOffsetResetStrategy``).

``by_duration:PT1H`` starts a partition without a valid position at its first record written
(by timestamp) in the last hour: the offset ListOffsets returns for the timestamp "now minus one
hour", or the log end when no record is that recent. The duration has the grammar of Java's
``java.time.Duration.parse``: ``[-+]P[nD][T[nH][nM][n[.fffffffff]S]]``, letters in any case,
days of 24 hours, each number with its own optional sign; a negative total is refused. As in
Java, ``by_duration`` and its ``P``/``T`` prefix are otherwise exact: ``BY_DURATION:PT1H`` is
refused, while ``earliest``, ``latest`` and ``none`` keep accepting any case, as they always have
here.
"""

from __future__ import annotations

import re
from typing import Any

from kafkaconsumer.errors import ConfigError

__all__ = [
    "AutoOffsetResetValidator",
    "BY_DURATION_PREFIX",
    "parse_duration_ns",
    "reset_duration_ns",
    "share_auto_offset_reset_error",
]

BY_DURATION_PREFIX = "by_duration:"

_NAMES = ("latest", "earliest", "none")
_NS_PER_SECOND = 1_000_000_000
_NS_PER_UNIT = {"D": 86_400 * _NS_PER_SECOND, "H": 3_600 * _NS_PER_SECOND, "M": 60 * _NS_PER_SECOND}
# Java's Duration fits a signed 64-bit count of seconds.
_MAX_SECONDS = 2**63 - 1

_DURATION = re.compile(
    r"(?P<sign>[-+]?)P(?:(?P<D>[-+]?[0-9]+)D)?"
    r"(?P<time>T(?:(?P<H>[-+]?[0-9]+)H)?(?:(?P<M>[-+]?[0-9]+)M)?"
    r"(?:(?P<S>[-+]?[0-9]+)(?:[.,](?P<frac>[0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ns(text: str) -> int:
    """Nanoseconds of an ISO-8601 duration in Java's ``Duration.parse`` grammar; ValueError when
    ``text`` does not parse (the same texts Java refuses)."""
    m = _DURATION.fullmatch(text)
    if m is None or (m["time"] is not None and m["time"].upper() == "T"):
        raise ValueError(f"Text cannot be parsed to a Duration: {text!r}")
    if not any(m[unit] is not None for unit in ("D", "H", "M", "S")):
        raise ValueError(f"Text cannot be parsed to a Duration: {text!r}")
    total = 0
    for unit, scale in _NS_PER_UNIT.items():
        if m[unit] is not None:
            total += int(m[unit]) * scale
    if m["S"] is not None:
        seconds = int(m["S"])
        fraction = int((m["frac"] or "").ljust(9, "0"))
        # The fraction takes the sign of its seconds ("-1.5S" is minus one and a half seconds).
        total += seconds * _NS_PER_SECOND + (-fraction if m["S"].startswith("-") else fraction)
    if m["sign"] == "-":
        total = -total
    if abs(total) // _NS_PER_SECOND > _MAX_SECONDS:
        raise ValueError(f"Text cannot be parsed to a Duration: numeric overflow: {text!r}")
    return total


def _cause(value: Any) -> str | None:
    """Why ``value`` is not an ``auto.offset.reset`` value (Java's wording), or None when it is."""
    if value is None:
        return "Auto offset reset strategy is null"
    if not isinstance(value, str):
        return f"Unknown auto offset reset strategy: {value}"
    if value == "by_duration":
        return "<:duration> part is missing in by_duration auto offset reset strategy."
    if value.lower() in _NAMES:
        return None
    if value.startswith(BY_DURATION_PREFIX):
        try:
            negative = parse_duration_ns(value[len(BY_DURATION_PREFIX) :]) < 0
        except ValueError as exc:
            return f"Unable to parse duration string in by_duration offset reset strategy. ({exc})"
        if negative:
            # Java wraps its own negative-duration error in the parse failure.
            return (
                "Unable to parse duration string in by_duration offset reset strategy. "
                "(Negative duration is not supported in by_duration offset reset strategy.)"
            )
        return None
    return f"Unknown auto offset reset strategy: {value}"


def share_auto_offset_reset_error(value: Any, name: str = "share.auto.offset.reset") -> str | None:
    """Why ``value`` cannot be a share group's ``share.auto.offset.reset`` (a group config the
    broker checks: ``earliest``, ``latest`` or ``by_duration:<duration>``, no ``none``), in the
    broker's words (Java ``ShareGroupAutoOffsetResetStrategy.Validator``); None when it can."""
    cause = _cause(value)
    if cause is None and str(value).lower() == "none":
        cause = "Unsupported strategy for ShareGroup: NONE"
    if cause is None:
        return None
    return (
        f"Invalid value `{value}` for configuration {name}. The value must be either "
        f"'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'. ({cause})"
    )


def reset_duration_ns(value: str) -> int | None:
    """The duration of a ``by_duration:`` value in nanoseconds; None for the other values."""
    if not value.startswith(BY_DURATION_PREFIX):
        return None
    return parse_duration_ns(value[len(BY_DURATION_PREFIX) :])


class AutoOffsetResetValidator:
    """Checks an ``auto.offset.reset`` value as Java's ``AutoOffsetResetStrategy.Validator``:
    ``earliest``, ``latest``, ``none`` (any case, normalised) or ``by_duration:<duration>``.

    Thread-safety: immutable.
    """

    def __call__(self, name: str, value: Any) -> Any:
        """The value to store (the names lower-cased); ConfigError with Java's message else."""
        cause = _cause(value)
        if cause is not None:
            raise ConfigError(
                f"Invalid value `{value}` for configuration {name}. The value must be either "
                f"'earliest', 'latest', 'none' or of the format 'by_duration:<PnDTnHnMn.nS.>'. "
                f"({cause})"
            )
        return value.lower() if value.lower() in _NAMES else value

    def describe(self) -> str:
        """The accepted values, for the configuration reference."""
        return "'latest', 'earliest', 'none', 'by_duration:PnDTnHnMn.nS'"

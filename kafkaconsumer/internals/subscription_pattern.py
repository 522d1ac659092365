"""A ``re`` subscription pattern as the broker-side regex of KIP-848 (``SubscribedTopicRegex``).

With ``group.protocol=consumer`` and ConsumerGroupHeartbeat v1 (Apache Kafka 4.0+), the broker
matches the subscription regex against its topics itself (RE2J syntax, the whole name must
match) and assigns new matching topics without the member sending names. Python's ``re`` and
RE2 agree on the common syntax but not on everything; :func:`to_broker_regex` returns the
regex to send, or the reason it cannot be sent, in which case the member resolves the pattern
locally and sends the matching names (what Java does for a ``java.util.regex.Pattern``).

Legal topic names are ASCII letters, digits, ``.``, ``_`` and ``-`` only, so the Unicode-aware
classes of ``re`` (``\\w``, ``\\d``, ``\\s``, ``\\b``) and RE2's ASCII ones match the same topics,
and ``$`` (which in ``re`` may also match before a final newline) cannot differ either.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["INTERNAL_TOPICS", "to_broker_regex"]

# Constructs RE2 does not have (it guarantees linear-time matching): back-references,
# look-around, conditionals, atomic groups and possessive quantifiers.
_UNSUPPORTED_OPS = {
    "GROUPREF": "a back-reference",
    "GROUPREF_EXISTS": "a conditional group",
    "ASSERT": "a look-ahead or look-behind",
    "ASSERT_NOT": "a negative look-ahead or look-behind",
    "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive quantifier",
}
# Escapes both dialects read the same way; every other letter or digit escape is refused
# (\Z, \u, \U, \N{...} and back-references are ``re``-only or differ in RE2).
_SAFE_ESCAPES = frozenset("dDwWsSbBAtnrfvx")
# Python-only inline flags: a (ASCII), L (locale), u (Unicode), x (verbose).
_INLINE_FLAGS = re.compile(r"\(\?[imsxauL-]*[xauL][imsxauL-]*[:)]")
# re reads "{,n}" as {0,n}; RE2 reads it as literal text.
_OPEN_LOWER_BOUND = re.compile(r"\{,\d")


def _parser() -> Any:
    # The regex parser of the standard library (private; renamed in 3.11). Loaded by name so
    # a future rename only disables the broker-side path instead of breaking the import.
    for name in ("re._parser", "sre_parse"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _unsupported_construct(tree: Any) -> str | None:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (list, tuple)) or type(node).__name__ == "SubPattern":
            items = list(node)
            if isinstance(node, tuple) and len(items) == 2 and hasattr(items[0], "name"):
                op = str(items[0].name)
                if op in _UNSUPPORTED_OPS:
                    return _UNSUPPORTED_OPS[op]
            stack.extend(items)
    return None


def _unsupported_escape(source: str) -> str | None:
    i = 0
    while i < len(source):
        if source[i] == "\\" and i + 1 < len(source):
            c = source[i + 1]
            if c.isascii() and c.isalnum() and c not in _SAFE_ESCAPES:
                return f"the escape \\{c}"
            i += 2
            continue
        i += 1
    return None


#: Kafka's internal topics. The broker matches a regex against every topic, internal ones
#: included, where the client leaves them out of a pattern (``exclude.internal.topics``).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def to_broker_regex(
    pattern: re.Pattern[str], internal_topics: Iterable[str] = ()
) -> tuple[str | None, str | None]:
    """``(regex, None)`` when ``pattern`` can be matched by the broker, else ``(None, reason)``.

    The flags ``re.IGNORECASE``, ``re.DOTALL`` and ``re.MULTILINE`` become RE2's inline
    ``(?i)``, ``(?s)`` and ``(?m)``; ``re.VERBOSE``, the constructs RE2 lacks, an empty
    pattern (an empty regex means "none" to the broker) and a pattern matching one of
    ``internal_topics`` (topics the client must leave out) keep the pattern on the client.
    """
    source = pattern.pattern
    if not isinstance(source, str):
        return None, "a bytes pattern"
    if not source:
        return None, "an empty pattern"
    internal = sorted(t for t in internal_topics if pattern.fullmatch(t))
    if internal:
        return None, f"it matches internal topics {internal} (exclude.internal.topics is true)"
    if pattern.flags & re.VERBOSE:
        return None, "the re.VERBOSE flag"
    reasons = (
        "inline flags RE2 does not have" if _INLINE_FLAGS.search(source) else None,
        "a {,n} quantifier" if _OPEN_LOWER_BOUND.search(source) else None,
        "a [: inside a character class" if "[:" in source else None,
        "a comment group" if "(?#" in source else None,
        _unsupported_escape(source),
    )
    for reason in reasons:
        if reason is not None:
            return None, reason
    parser = _parser()
    if parser is None:
        return None, "no regex parser in this Python"
    try:
        tree = parser.parse(source, pattern.flags)
    except Exception as exc:  # noqa: BLE001 - any doubt keeps the pattern on the client
        return None, f"it could not be analysed ({exc})"
    reason = _unsupported_construct(tree)
    if reason is not None:
        return None, reason
    prefix = "".join(
        letter
        for flag, letter in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
        if pattern.flags & flag
    )
    return (f"(?{prefix}){source}" if prefix else source), None

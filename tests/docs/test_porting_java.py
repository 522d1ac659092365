"""The key-by-key table of docs/porting-java.md against ``kafkaconsumer.config``, so that it
cannot drift: every key of ours is in it, every row names a key of ours or says it is not
supported, a row that says "same" shows our default, and each row's verdict matches how the key
is defined (refused unless at its default, always off here, only here)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.config import ConfigType, ConsumerConfig
from kafkaconsumer.errors import ConfigError

PAGE = Path(__file__).resolve().parents[2] / "docs" / "porting-java.md"
_ROW = re.compile(r"^\| `([a-z0-9.\-]+)` \| (.*?) \| (.*) \|$")

#: How each row's last column starts, by kind of key.
SAME = "same"
DIFFERENT = "different default:"
DEFAULT_ONLY = "default only, other values raise:"
ALWAYS_OFF = "always off here, both values load:"
UNSUPPORTED = "not supported:"
ONLY_HERE = "only here:"


def render_default(value: Any) -> str:
    """A default as the table writes it (Java's spelling: ``null``, ``true``, lists joined
    by commas)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value) or '""'
    if value == "":
        return '""'
    return str(value)


def _table(heading: str) -> dict[str, tuple[str, str]]:
    """The rows of the table under ``heading``: key -> (default column, verdict column)."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    rows: dict[str, tuple[str, str]] = {}
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if m := _ROW.match(line):
            assert m[1] not in rows, f"{m[1]} is in the table twice"
            rows[m[1]] = (m[2].strip("`"), m[3])
    assert rows, f"no table under {heading!r}"
    return rows


def _not(default: Any) -> Any:
    """A value unlike ``default`` of the same kind (a refused key raises for it)."""
    if isinstance(default, bool):
        return not default
    if isinstance(default, (int, float)):
        return default + 1
    return "PKCS12" if default == "JKS" else "something-else"


JAVA = "### Every Java consumer key"
OURS = "### Keys only this client has"


def test_every_key_of_ours_is_in_a_table() -> None:
    java, ours = _table(JAVA), _table(OURS)
    for name, key in ConsumerConfig.definitions().items():
        assert name in (ours if key.python_only else java), f"{name} is missing from the table"


def test_each_java_row_says_what_the_key_does_here() -> None:
    definitions = ConsumerConfig.definitions()
    for name, (java_default, verdict) in _table(JAVA).items():
        key = definitions.get(name)
        if key is None:
            assert verdict.startswith(UNSUPPORTED), f"{name} is not a key here: {verdict!r}"
            with pytest.raises(ConfigError, match=re.escape(name)):
                ConsumerConfig({"bootstrap.servers": "localhost:9092", name: "1"})
            continue
        assert not key.python_only, f"{name} is ours only: move it to {OURS!r}"
        ours = render_default(key.default)
        if key.unsupported:
            always_off = key.type is ConfigType.BOOLEAN and key.honoured
            assert verdict.startswith(ALWAYS_OFF if always_off else DEFAULT_ONLY), (name, verdict)
            assert java_default == ours, (name, java_default, ours)
            if not always_off:
                with pytest.raises(ConfigError, match=re.escape(name)):
                    ConsumerConfig({"bootstrap.servers": "localhost:9092", name: _not(key.default)})
        elif verdict == SAME or verdict.startswith(f"{SAME} ("):
            assert java_default == ours, f"{name}: Java {java_default}, here {ours}"
        else:
            assert verdict.startswith(DIFFERENT), (name, verdict)
            assert java_default != ours and f"`{ours}`" in verdict, (name, verdict, ours)


def test_each_row_of_ours_is_ours() -> None:
    definitions = ConsumerConfig.definitions()
    for name, (default, verdict) in _table(OURS).items():
        assert name in definitions and definitions[name].python_only, name
        assert default == render_default(definitions[name].default), name
        assert verdict.startswith(ONLY_HERE), (name, verdict)

"""Parsing ``sasl.jaas.config``: the one JAAS login-module entry Java's clients take."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from kafkaconsumer.errors import ConfigError


class JaasConfig(NamedTuple):
    """A parsed ``sasl.jaas.config`` entry: ``LoginModuleClass flag key="value" ...;``."""

    login_module: str
    control_flag: str
    options: Mapping[str, str]

    def __repr__(self) -> str:
        # Options usually hold a password: show only their names.
        return (
            f"JaasConfig(login_module={self.login_module!r}, control_flag={self.control_flag!r}, "
            f"options=[{', '.join(sorted(self.options))}])"
        )


_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")
_JAAS_TOKEN = re.compile(
    r"""\s*(?:
        (?P<quoted>"(?:[^"\\]|\\.)*")      # a double-quoted string with \-escapes
      | (?P<eq>=)
      | (?P<semi>;)
      | (?P<word>[^\s=;"]+)
    )""",
    re.VERBOSE,
)


def parse_jaas_config(text: str) -> JaasConfig:
    """Parse one JAAS login-module entry as Java's ``sasl.jaas.config`` takes it.

    Example: ``org.apache.kafka.common.security.plain.PlainLoginModule required
    username="alice" password="secret";``. Raises :class:`ConfigError` (without echoing the
    text, which holds a secret) when the entry is malformed.
    """
    tokens: list[tuple[str, str]] = []
    pos = 0
    stripped = text.strip()
    while pos < len(stripped):
        m = _JAAS_TOKEN.match(stripped, pos)
        if m is None or m.end() == pos:
            raise ConfigError("sasl.jaas.config: unexpected character (value hidden)")
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m.group(kind)))
    if not tokens or tokens[-1][0] != "semi":
        raise ConfigError("sasl.jaas.config: the entry must end with ';' (value hidden)")
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise ConfigError(
            "sasl.jaas.config: expected '<LoginModuleClass> <controlFlag> key=value ... ;'"
        )
    if any(kind == "semi" for kind, _ in tokens[:-1]):
        raise ConfigError("sasl.jaas.config: only one login module entry is supported")
    module, flag = tokens[0][1], tokens[1][1].lower()
    if flag not in _JAAS_FLAGS:
        raise ConfigError(
            f"sasl.jaas.config: control flag {tokens[1][1]!r} is not one of {', '.join(_JAAS_FLAGS)}"
        )
    options: dict[str, str] = {}
    body = tokens[2:-1]
    i = 0
    while i < len(body):
        if i + 2 >= len(body):
            raise ConfigError("sasl.jaas.config: options must be key=value (value hidden)")
        key_tok, eq_tok, val_tok = body[i], body[i + 1], body[i + 2]
        if key_tok[0] != "word" or eq_tok[0] != "eq" or val_tok[0] not in ("word", "quoted"):
            raise ConfigError("sasl.jaas.config: options must be key=value (value hidden)")
        value = val_tok[1]
        if val_tok[0] == "quoted":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[key_tok[1]] = value
        i += 3
    return JaasConfig(module, flag, options)

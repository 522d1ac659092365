"""How a configuration key is defined and parsed (Java ``ConfigDef``).

A :class:`ConfigKey` holds one key's type, default, documentation and validator; :func:`_parse`
turns a user's value into the key's type the way ``ConfigDef.parseType`` does (``"true"`` is a
boolean, ``"500"`` an int, ``"a,b"`` a list); the range and choice validators are Java's
``ConfigDef.Range``, ``ValidString`` and ``ValidList``. The key tables of each client
(``common_client_configs``, ``consumer_config``, ...) are written with :func:`_k`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

from kafkaconsumer.errors import ConfigError


class ConfigType(enum.Enum):
    """The value type of a configuration key (Java ``ConfigDef.Type`` plus ``OBJECT``)."""

    BOOLEAN = "boolean"
    SHORT = "short"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    STRING = "string"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"
    #: A Python object (an ``ssl.SSLContext``, a callable); Python-only keys use it.
    OBJECT = "object"


class Importance(enum.Enum):
    """How much a key matters to most users (as Java's ``ConfigDef.Importance``)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Password:
    """A secret configuration value; ``str()`` and ``repr()`` show ``[hidden]``, never the value.

    Compare two passwords with ``==``; read the secret with :attr:`value`.
    """

    __slots__ = ("_value",)

    HIDDEN: ClassVar[str] = "[hidden]"

    def __init__(self, value: str) -> None:
        """Wrap the secret ``value``."""
        if not isinstance(value, str):
            raise TypeError("a password must be a str")
        self._value = value

    @property
    def value(self) -> str:
        """The secret itself."""
        return self._value

    def reveal(self) -> str:
        """The secret itself (the spelling the network layer's secrets use)."""
        return self._value

    def __repr__(self) -> str:
        return self.HIDDEN

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickling keeps the secret (a config shipped to a Spark executor must still connect).
        return (Password, (self._value,))


Validator = Callable[[str, Any], Any]


class _Range:
    """Numeric bounds check (Java ``ConfigDef.Range``)."""

    def __init__(self, lo: float | None = None, hi: float | None = None) -> None:
        self.lo = lo
        self.hi = hi

    def __call__(self, name: str, value: Any) -> Any:
        if value is None:
            return value
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise ConfigError(f"{name}: invalid value {value!r}; must be {self.describe()}")
        return value

    def describe(self) -> str:
        if self.hi is None:
            return f">= {self.lo}"
        if self.lo is None:
            return f"<= {self.hi}"
        return f"between {self.lo} and {self.hi}"


class _OneOf:
    """String enumeration check; normalises case when the key is case-insensitive."""

    def __init__(
        self, *choices: str, case_insensitive: bool = True, nullable: bool = False
    ) -> None:
        self.choices = choices
        self.case_insensitive = case_insensitive
        self.nullable = nullable
        self._lookup = {(c.lower() if case_insensitive else c): c for c in choices}

    def __call__(self, name: str, value: Any) -> Any:
        if value is None:
            if self.nullable:
                return None
            raise ConfigError(f"{name}: must be set, one of {self.describe()}")
        key = value.lower() if self.case_insensitive else value
        if key not in self._lookup:
            raise ConfigError(f"{name}: invalid value {value!r}; must be one of {self.describe()}")
        return self._lookup[key]

    def describe(self) -> str:
        return ", ".join(repr(c) for c in self.choices)


class _ListOf:
    """Checks every item of a list with an item validator."""

    def __init__(self, item: Validator) -> None:
        self.item = item

    def __call__(self, name: str, value: Any) -> Any:
        if value is None:
            return value
        return tuple(self.item(name, v) for v in value)

    def describe(self) -> str:
        inner = getattr(self.item, "describe", None)
        return f"each {inner()}" if inner else ""


class ConfigKey(NamedTuple):
    """The definition of one configuration key (immutable)."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    importance: Importance = Importance.LOW
    validator: Validator | None = None
    #: Why a value other than the default (or one of :attr:`honoured`) cannot work in this
    #: client, and what to use instead; such a value raises at construction. Empty for a key
    #: that takes effect.
    unsupported: str = ""
    #: Values other than the default that an ``unsupported`` key accepts because they ask for
    #: what this client does anyway (``enable.metrics.push=false``: it never pushes).
    honoured: tuple[Any, ...] = ()
    #: A key of this Python client that Java does not have.
    python_only: bool = False
    #: An internal Java key (``internal.*``), not part of the public documentation.
    internal: bool = False

    @property
    def snake_name(self) -> str:
        """The keyword-argument spelling of the key (``fetch.min.bytes`` -> ``fetch_min_bytes``)."""
        return self.name.replace(".", "_").replace("-", "_")

    def describe_validity(self) -> str:
        """A short human description of the accepted values (for the documentation)."""
        describe = getattr(self.validator, "describe", None)
        return describe() if describe else ""


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_INT16 = (-(2**15), 2**15 - 1)


def _parse(key: ConfigKey, value: Any) -> Any:
    """Convert a user value to the key's type (Java ``ConfigDef.parseType``)."""
    name, t = key.name, key.type
    if value is None:
        if (
            t
            in (
                ConfigType.BOOLEAN,
                ConfigType.SHORT,
                ConfigType.INT,
                ConfigType.LONG,
                ConfigType.DOUBLE,
            )
            and key.default is not None
        ):
            raise ConfigError(f"{name}: must not be None (expected a {t.value})")
        return None
    if t is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            s = value.strip().lower()
            if s == "true":
                return True
            if s == "false":
                return False
        raise ConfigError(f"{name}: invalid value {value!r}; expected a boolean (true/false)")
    if t in (ConfigType.SHORT, ConfigType.INT, ConfigType.LONG):
        parsed: int
        if isinstance(value, bool):
            raise ConfigError(f"{name}: invalid value {value!r}; expected an integer")
        if isinstance(value, int):
            parsed = value
        elif isinstance(value, str):
            try:
                parsed = int(value.strip())
            except ValueError:
                raise ConfigError(f"{name}: invalid value {value!r}; expected an integer") from None
        elif isinstance(value, float) and value.is_integer():
            parsed = int(value)
        else:
            raise ConfigError(f"{name}: invalid value {value!r}; expected an integer")
        lo, hi = {ConfigType.SHORT: _INT16, ConfigType.INT: _INT32, ConfigType.LONG: _INT64}[t]
        if not lo <= parsed <= hi:
            raise ConfigError(f"{name}: value {parsed} does not fit a Java {t.value}")
        return parsed
    if t is ConfigType.DOUBLE:
        if isinstance(value, bool):
            raise ConfigError(f"{name}: invalid value {value!r}; expected a number")
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise ConfigError(f"{name}: invalid value {value!r}; expected a number")
    if t is ConfigType.STRING:
        if isinstance(value, str):
            return value.strip()
        if name == "acks" and isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # Python clients conventionally pass acks as an int
        raise ConfigError(f"{name}: invalid value {value!r}; expected a string")
    if t is ConfigType.LIST:
        if isinstance(value, str):
            s = value.strip()
            if not s:
                return ()
            items = [part.strip() for part in s.split(",")]
            if any(not part for part in items):
                raise ConfigError(f"{name}: invalid list {value!r}; it has an empty item")
            return tuple(items)
        if isinstance(value, (list, tuple)):
            out = []
            for item in value:
                if isinstance(item, str):
                    item = item.strip()
                    if not item:
                        raise ConfigError(f"{name}: invalid list {value!r}; it has an empty item")
                out.append(item)
            return tuple(out)
        raise ConfigError(
            f"{name}: invalid value {value!r}; expected a list or a comma-separated string"
        )
    if t is ConfigType.PASSWORD:
        if isinstance(value, Password):
            return value
        if isinstance(value, str):
            return Password(value)
        raise ConfigError(f"{name}: expected a string password, got {type(value).__name__}")
    if t is ConfigType.CLASS:
        if isinstance(value, str):
            s = value.strip()
            if not s:
                raise ConfigError(f"{name}: must not be an empty string")
            return s
        return value
    return value  # OBJECT


# Helpers building definitions compactly.
H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
T = ConfigType


def _k(
    name: str,
    type_: ConfigType,
    default: Any,
    doc: str,
    importance: Importance = L,
    validator: Validator | None = None,
    **flags: Any,
) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, importance, validator, **flags)


def _index(keys: list[ConfigKey]) -> dict[str, ConfigKey]:
    out: dict[str, ConfigKey] = {}
    for key in keys:
        if key.name in out:
            raise AssertionError(f"duplicate config key {key.name}")
        out[key.name] = key
    snake: dict[str, str] = {}
    for key in keys:
        if key.snake_name in snake and snake[key.snake_name] != key.name:
            raise AssertionError(f"keys {key.name} and {snake[key.snake_name]} share a keyword")
        snake[key.snake_name] = key.name
    return out

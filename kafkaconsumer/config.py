"""Client configuration: every Java consumer key with its default, type and validation.

:class:`ConsumerConfig` accepts the keys of the Java ``ConsumerConfig`` (plus those of
``CommonClientConfigs``, ``SslConfigs`` and ``SaslConfigs``) verbatim, or as snake_case keywords
(``fetch_min_bytes=1`` is ``fetch.min.bytes``). Values are parsed the way the Java ``ConfigDef``
parses them (``"true"`` is a boolean, ``"500"`` an int, ``"a,b"`` a list) and validated at
construction: an unknown key or a bad value raises :class:`~kafkaconsumer.errors.ConfigError`
naming the key. The result is a read-only ``Mapping[str, Any]`` of Java keys with every default
filled in, which the other layers (network client, coordinator, fetcher) read directly.

:class:`ProducerConfig` and :class:`AdminClientConfig` do the same for the small producer and
admin clients. Password values are wrapped in :class:`Password`, whose ``str``/``repr`` never
show the secret; read the secret with ``config.get_password(key)`` or ``password.value``.

A few Python-only keys exist where Java's mechanism (JAAS files, JVM key stores, callback
classes) has no Python equivalent: ``sasl.username``, ``sasl.password``,
``sasl.oauthbearer.token.provider`` (a callable returning a token) and ``ssl.context`` (a
ready ``ssl.SSLContext``), and the ``*.deserializer.encoding`` / ``*.serializer.encoding`` keys
Java's ``StringDeserializer`` / ``StringSerializer`` read.
"""

from __future__ import annotations

import enum
import importlib
import itertools
import logging
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, NamedTuple

from kafkaconsumer.auto_offset_reset import AutoOffsetResetValidator
from kafkaconsumer.errors import ConfigError

logger = logging.getLogger(__name__)

__all__ = [
    "ConfigType",
    "Importance",
    "ConfigKey",
    "Password",
    "JaasConfig",
    "parse_jaas_config",
    "parse_bootstrap_servers",
    "AbstractConfig",
    "ConsumerConfig",
    "ProducerConfig",
    "AdminClientConfig",
    "CONSUMER_MAX_IN_FLIGHT_REQUESTS",
    "config_default",
    "config_value",
]


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


# --------------------------------------------------------------------------- JAAS parsing


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


# --------------------------------------------------------------------------- bootstrap parsing

_HOST_PORT = re.compile(
    r"^(?:\[(?P<v6>[0-9a-fA-F:.%a-zA-Z]+)\]|(?P<host>[^\s:\[\]/]+)):(?P<port>\d+)$"
)


def parse_bootstrap_servers(servers: Any) -> list[tuple[str, int]]:
    """Split ``bootstrap.servers`` (a list or comma-separated string) into ``(host, port)``.

    IPv6 literals are written in brackets (``[::1]:9092``). Raises :class:`ConfigError` naming
    the bad entry.
    """
    if isinstance(servers, str):
        items = [s.strip() for s in servers.split(",") if s.strip()]
    else:
        items = [str(s).strip() for s in servers]
    out: list[tuple[str, int]] = []
    for item in items:
        m = _HOST_PORT.match(item)
        if m is None:
            raise ConfigError(
                f"bootstrap.servers: invalid entry {item!r}; expected host:port "
                "(IPv6 as [addr]:port)"
            )
        port = int(m.group("port"))
        if not 0 < port < 65536:
            raise ConfigError(f"bootstrap.servers: invalid port in {item!r}")
        out.append((m.group("v6") or m.group("host"), port))
    return out


# --------------------------------------------------------------------------- validators

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


def _non_empty(name: str, value: Any) -> Any:
    if value is not None and value == "":
        raise ConfigError(f"{name}: must be a non-empty string when set")
    return value


_GROUP_INSTANCE_ID = re.compile(r"^[a-zA-Z0-9._-]+$")


def _group_instance_id(name: str, value: Any) -> Any:
    if value is None:
        return value
    if value == "" or len(value) > 249 or not _GROUP_INSTANCE_ID.match(value):
        raise ConfigError(
            f"{name}: invalid value {value!r}; must be 1 to 249 characters of "
            "ASCII letters, digits, '.', '_' and '-'"
        )
    return value


def _bootstrap(name: str, value: Any) -> Any:
    if value is None:
        raise ConfigError(f"{name}: must not be null")
    parse_bootstrap_servers(value)
    return value


def _ssl_context(name: str, value: Any) -> Any:
    # ssl itself is not imported (~7 ms of start-up): an SSLContext can only exist once it is.
    ssl = sys.modules.get("ssl")
    if value is not None and (ssl is None or not isinstance(value, ssl.SSLContext)):
        raise ConfigError(f"{name}: expected an ssl.SSLContext, got {type(value).__name__}")
    return value


def _token_provider(name: str, value: Any) -> Any:
    if value is None or callable(value) or callable(getattr(value, "token", None)):
        return value
    raise ConfigError(
        f"{name}: expected a callable returning a token (or an object with a token() method), "
        f"got {type(value).__name__}"
    )


_ACKS = _OneOf("all", "-1", "0", "1")


def _unsupported_when_set(name: str, value: Any) -> Any:
    if value is not None:
        raise ConfigError(f"{name}: not supported by this client; leave it unset")
    return value


def _str_mapping(name: str, value: Any) -> Any:
    if value is None:
        return value
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{name}: expected a mapping of str to str")
    return dict(value)


def _encoding(name: str, value: Any) -> Any:
    if value is None:
        return value
    import codecs

    try:
        codecs.lookup(value)
    except LookupError:
        raise ConfigError(f"{name}: unknown text encoding {value!r}") from None
    return value


def _importable(name: str, value: Any) -> Any:
    """A ``module:attr`` or ``module.attr`` string must import; objects pass unchanged."""
    if not isinstance(value, str):
        return value
    resolve_object(value, key=name)
    return value


def resolve_object(spec: str, *, key: str = "") -> Any:
    """Import ``"package.module:Name"`` or ``"package.module.Name"`` and return the object.

    Raises :class:`ConfigError` naming ``key`` when the module or attribute does not exist.
    """
    where = f"{key}: " if key else ""
    if ":" in spec:
        module_name, _, attr_path = spec.partition(":")
    elif "." in spec:
        module_name, _, attr_path = spec.rpartition(".")
    else:
        raise ConfigError(f"{where}{spec!r} is not a 'module:Name' or 'module.Name' path")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{where}cannot import module {module_name!r} for {spec!r}: {exc}"
        ) from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(
                f"{where}module {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return obj


def _deserializer_spec(name: str, value: Any) -> Any:
    from kafkaconsumer.serialization import validate_deserializer_spec

    try:
        validate_deserializer_spec(value)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: invalid value {value!r}: {exc}") from None
    return value


def _serializer_spec(name: str, value: Any) -> Any:
    from kafkaconsumer.serialization import validate_serializer_spec

    try:
        validate_serializer_spec(value)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: invalid value {value!r}: {exc}") from None
    return value


#: Assignor names the coordinator understands without an import (Java class names and short
#: names; the assignors package maps them to implementations).
KNOWN_ASSIGNORS = (
    "org.apache.kafka.clients.consumer.RangeAssignor",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "org.apache.kafka.clients.consumer.StickyAssignor",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    "range",
    "roundrobin",
    "sticky",
    "cooperative-sticky",
)


def _assignor(name: str, value: Any) -> Any:
    if isinstance(value, str):
        if value in KNOWN_ASSIGNORS:
            return value
        if value.startswith("org.apache.kafka."):
            raise ConfigError(
                f"{name}: unknown Java assignor {value!r}; known: {', '.join(KNOWN_ASSIGNORS[:4])}"
            )
        resolve_object(value, key=name)
        return value
    if value is None:
        raise ConfigError(f"{name}: list items must not be None")
    return value


def _interceptor(name: str, value: Any) -> Any:
    if value is None:
        raise ConfigError(f"{name}: list items must not be None")
    return _importable(name, value)


#: Java's default metric reporter: there is no JMX in Python, so it stands for "no reporter".
JMX_REPORTER = "org.apache.kafka.common.metrics.JmxReporter"


def _metric_reporter(name: str, value: Any) -> Any:
    # The JmxReporter default is skipped (see JMX_REPORTER); any other Java class would be a
    # reporter silently dropped, so it is refused. Python paths must import.
    if value == JMX_REPORTER:
        return value
    if isinstance(value, str) and (value.startswith("org.apache.") or value.startswith("io.")):
        raise ConfigError(
            f"{name}: {value!r} is a Java class, and Java reporters cannot run in this Python "
            "client; give a Python reporter object, class or import path (module:Name)"
        )
    return _importable(name, value)


# --------------------------------------------------------------------------- key definitions


_NO_DEFAULT = object()


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


_SECURITY_PROTOCOLS = _OneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = _OneOf("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_TLS_PROTOCOLS = ("TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1", "TLS")
_STORE_TYPES = _OneOf("JKS", "PKCS12", "PEM")
_NON_NEGATIVE = _Range(0)


# Why keys of several Java mechanisms refuse any value but their default (ConfigKey.unsupported).
_NO_JAVA_PROVIDERS = (
    "Java security providers cannot be loaded from Python; TLS here is OpenSSL through "
    "the ssl module: for other TLS settings pass a configured ssl.SSLContext as "
    "ssl.context"
)
_NO_GSSAPI = (
    "GSSAPI (Kerberos) is not supported by this client; use sasl.mechanism PLAIN, "
    "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
)
_NO_TOKEN_HTTP = (
    "this client does not fetch tokens over HTTP (Java's "
    "sasl.oauthbearer.token.endpoint.url); the token comes from "
    "sasl.oauthbearer.token.provider, which sets its own timeouts"
)
_NO_TOKEN_CLAIMS = (
    "a claim Java's login module reads from a token it fetched; here "
    "sasl.oauthbearer.token.provider returns the token and its lifetime as they are"
)
_NO_TOKEN_VALIDATION = (
    "a setting for validating tokens, which this client does not do: it sends the "
    "token sasl.oauthbearer.token.provider returns and the broker validates it"
)


def _common_keys(client: str) -> list[ConfigKey]:
    """Keys every client shares: connection, metadata, metrics, TLS and SASL."""
    idle_default = 300000 if client == "admin" else 540000
    return [
        _k(
            "bootstrap.servers",
            T.LIST,
            (),
            "Comma-separated host:port pairs of brokers used to "
            "discover the cluster. Any subset of the brokers will do; list more than one so that "
            "start-up survives one being down.",
            H,
            _bootstrap,
        ),
        _k(
            "client.dns.lookup",
            T.STRING,
            "use_all_dns_ips",
            "How host names are resolved: "
            "use_all_dns_ips tries every address of a name in turn; "
            "resolve_canonical_bootstrap_servers_only expands each bootstrap name to its "
            "canonical names first.",
            M,
            _OneOf("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
        ),
        _k(
            "bootstrap.resolve.timeout.ms",
            T.LONG,
            120000,
            "How long Java (KIP-909) keeps retrying to resolve the bootstrap host names before "
            "failing.",
            H,
            _NON_NEGATIVE,
            unsupported=(
                "the bootstrap names are resolved once, when the client is built (as Java did "
                "before KIP-909): a name that does not resolve is skipped and construction fails "
                "when none resolves, so there is no retry window to size"
            ),
        ),
        _k(
            "client.id",
            T.STRING,
            "",
            "A name for this client sent with every request, so broker "
            "logs and quotas can tell clients apart. Generated when empty.",
            L,
        ),
        _k(
            "client.rack",
            T.STRING,
            "",
            "The rack (or availability zone) this client runs in; "
            "lets a broker with replica.selector.class serve fetches from a nearby replica.",
            L,
        ),
        _k(
            "metadata.max.age.ms",
            T.LONG,
            300000,
            "Refresh cluster metadata at least this often, "
            "even without errors, to discover new brokers and partitions.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "send.buffer.bytes",
            T.INT,
            131072,
            "TCP send buffer size (SO_SNDBUF); -1 keeps the operating-system default.",
            M,
            _Range(-1),
        ),
        _k(
            "receive.buffer.bytes",
            T.INT,
            # The consumer departs from Java's 65536: a fixed 64 KiB buffer turns off the
            # kernel's autotuning, so an 8 MiB fetch response arrives in ~65 reads and the
            # broker cannot send ahead while records are decoded (docs/fetching.md).
            32768 if client == "producer" else -1,
            "TCP receive buffer size (SO_RCVBUF); -1 keeps the operating-system default "
            "(the consumer's default, which lets Linux grow the buffer; Java's is 65536).",
            M,
            _Range(-1),
        ),
        _k(
            "reconnect.backoff.ms",
            T.LONG,
            50,
            "Initial wait before reconnecting to a broker "
            "after a failed connection; doubles per failure up to reconnect.backoff.max.ms. "
            "Setting it alone (without the max) disables the doubling, as in Java.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "reconnect.backoff.max.ms",
            T.LONG,
            1000,
            "Upper bound of the reconnect backoff (20% random jitter is applied).",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "retry.backoff.ms",
            T.LONG,
            100,
            "Initial wait before retrying a failed request; "
            "doubles per failure up to retry.backoff.max.ms.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "retry.backoff.max.ms",
            T.LONG,
            1000,
            "Upper bound of the retry backoff (20% random jitter is applied).",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "socket.connection.setup.timeout.ms",
            T.LONG,
            10000,
            "How long to wait for a TCP "
            "connection (and TLS/SASL set-up) before abandoning it; grows per consecutive "
            "failure up to the max.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "socket.connection.setup.timeout.max.ms",
            T.LONG,
            30000,
            "Upper bound of the connection set-up timeout.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "connections.max.idle.ms",
            T.LONG,
            idle_default,
            "Close a broker connection that has been idle this long.",
            M,
        ),
        _k(
            "request.timeout.ms",
            T.INT,
            30000,
            "How long to wait for the response to one "
            "request before failing it (and retrying where that is safe).",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "metadata.recovery.strategy",
            T.STRING,
            "none",
            "What to do when no known broker is "
            "reachable: none keeps trying them; rebootstrap goes back to bootstrap.servers.",
            L,
            _OneOf("none", "rebootstrap"),
        ),
        _k(
            "metrics.sample.window.ms",
            T.LONG,
            30000,
            "Length of one metrics sample window.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "metrics.num.samples",
            T.INT,
            2,
            "Number of sample windows a windowed metric (rate, avg, max) spans.",
            L,
            _Range(1),
        ),
        _k(
            "metrics.recording.level",
            T.STRING,
            "INFO",
            "Highest recording level of the sensors that record: INFO, DEBUG or TRACE. A sensor "
            "of a higher level keeps its metrics but records nothing, as in Java. The consumer's "
            "own sensors are all INFO, as in Java's consumer; the level decides for sensors made "
            "at DEBUG or TRACE (Metrics.sensor(name, recording_level)) in a registry built with "
            "Metrics.from_config.",
            L,
            _OneOf("INFO", "DEBUG", "TRACE"),
        ),
        _k(
            "metric.reporters",
            T.LIST,
            (JMX_REPORTER,),
            "Objects (or import paths of classes) told about every metric. The Java default, "
            "JmxReporter, stands for none (there is no JMX in Python); other Java class names are "
            "refused.",
            L,
            _ListOf(_metric_reporter),
        ),
        _k(
            "auto.include.jmx.reporter",
            T.BOOLEAN,
            True,
            "Java 3.x switch adding the JMX reporter to metric.reporters.",
            L,
            unsupported=(
                "there is no JMX in Python, so there is no JMX reporter to include; false (leave "
                "it out) is what this client does anyway. Python reporters go in metric.reporters"
            ),
            honoured=(False,),
        ),
        _k(
            "enable.metrics.push",
            T.BOOLEAN,
            True,
            "Push client metrics to the broker when it has a matching subscription (KIP-714).",
            L,
            unsupported=(
                "client metrics push (KIP-714) is not implemented: the client never asks the "
                "broker for a metrics subscription, so there is never anything to push; false "
                "(never push) is what it does anyway"
            ),
            honoured=(False,),
        ),
        _k(
            "security.protocol",
            T.STRING,
            "PLAINTEXT",
            "How to talk to brokers: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL.",
            M,
            _SECURITY_PROTOCOLS,
        ),
        _k(
            "security.providers",
            T.STRING,
            None,
            "Java security provider classes.",
            L,
            unsupported=_NO_JAVA_PROVIDERS,
        ),
        # ----- TLS
        _k(
            "ssl.protocol",
            T.STRING,
            "TLSv1.3",
            "The TLS protocol of Java's SSLContext, which bounds the newest TLS version a "
            "connection may use: TLSv1.2 keeps connections off TLSv1.3 even when "
            "ssl.enabled.protocols lists it; TLSv1.3 and TLS add no bound. Refused when it "
            "leaves none of ssl.enabled.protocols.",
            M,
            _OneOf(*_TLS_PROTOCOLS),
        ),
        _k(
            "ssl.provider",
            T.STRING,
            None,
            "Java security provider for TLS.",
            M,
            unsupported=_NO_JAVA_PROVIDERS,
        ),
        _k(
            "ssl.cipher.suites",
            T.LIST,
            None,
            "Cipher suites to allow (OpenSSL or IANA names); "
            "all the TLS library enables by default when unset.",
            L,
        ),
        _k(
            "ssl.enabled.protocols",
            T.LIST,
            ("TLSv1.2", "TLSv1.3"),
            "TLS protocol versions allowed on connections.",
            M,
            _ListOf(_OneOf(*_TLS_PROTOCOLS)),
        ),
        _k(
            "ssl.keystore.type",
            T.STRING,
            "JKS",
            "Format of the client key store: PEM is the only one readable here (the Java default "
            "JKS is accepted for files that are PEM). PKCS12 is refused; JKS with "
            "ssl.keystore.location too.",
            M,
            _STORE_TYPES,
            unsupported=(
                "only PEM key stores are readable here: convert the store to PEM (openssl pkcs12 "
                "converts a PKCS12 file; keytool -importkeystore turns JKS into PKCS12 first) and "
                "set ssl.keystore.type=PEM"
            ),
            honoured=("PEM",),
        ),
        _k(
            "ssl.keystore.location",
            T.STRING,
            None,
            "Path of a PEM file with the client certificate chain and private key, for mutual TLS.",
            H,
        ),
        _k(
            "ssl.keystore.password",
            T.PASSWORD,
            None,
            "Password of a JKS or PKCS12 key store file; PEM key stores have none.",
            H,
            unsupported=(
                "a PEM key store has no store password (Java refuses one with PEM too); put the "
                "private key's password in ssl.key.password"
            ),
        ),
        _k(
            "ssl.key.password",
            T.PASSWORD,
            None,
            "Password of the private key (in ssl.keystore.location or ssl.keystore.key).",
            H,
        ),
        _k("ssl.keystore.key", T.PASSWORD, None, "The client private key as PEM text (PKCS#8).", H),
        # Java types the two certificate keys as passwords; certificates are public, and a
        # plain string is what the TLS layer loads, so they are strings here.
        _k(
            "ssl.keystore.certificate.chain",
            T.STRING,
            None,
            "The client certificate chain as PEM text.",
            H,
        ),
        _k(
            "ssl.truststore.certificates", T.STRING, None, "Trusted CA certificates as PEM text.", H
        ),
        _k(
            "ssl.truststore.type",
            T.STRING,
            "JKS",
            "Format of the trust store: PEM is the only one readable here (the Java default JKS "
            "is accepted for files that are PEM). PKCS12 is refused; JKS with "
            "ssl.truststore.location too.",
            M,
            _STORE_TYPES,
            unsupported=(
                "only PEM trust stores are readable here: convert the store to a PEM file of CA "
                "certificates and set ssl.truststore.type=PEM"
            ),
            honoured=("PEM",),
        ),
        _k(
            "ssl.truststore.location",
            T.STRING,
            None,
            "Path of a PEM file of trusted CA "
            "certificates; the system trust store is used when unset.",
            H,
        ),
        _k(
            "ssl.truststore.password",
            T.PASSWORD,
            None,
            "Password of a JKS or PKCS12 trust store file; PEM trust stores have none.",
            H,
            unsupported=(
                "a PEM trust store (a file of CA certificates) has no password; leave it unset"
            ),
        ),
        _k(
            "ssl.keymanager.algorithm",
            T.STRING,
            "SunX509",
            "Java key manager algorithm.",
            L,
            unsupported=(
                "Java key managers do not exist in Python: OpenSSL presents the certificate of "
                "ssl.keystore.location; for anything else pass an ssl.SSLContext as ssl.context"
            ),
        ),
        _k(
            "ssl.trustmanager.algorithm",
            T.STRING,
            "PKIX",
            "Java trust manager algorithm.",
            L,
            unsupported=(
                "Java trust managers do not exist in Python: OpenSSL verifies the broker's chain "
                "against the trust store (PKIX); for other checks pass an ssl.SSLContext as "
                "ssl.context"
            ),
        ),
        _k(
            "ssl.endpoint.identification.algorithm",
            T.STRING,
            "https",
            "'https' checks that the "
            "broker certificate matches its host name; an empty string turns the check off.",
            L,
            _OneOf("https", "", nullable=True),
        ),
        _k(
            "ssl.secure.random.implementation",
            T.STRING,
            None,
            "Java SecureRandom implementation.",
            L,
            unsupported="OpenSSL uses its own random generator, which cannot be chosen from Python",
        ),
        _k(
            "ssl.engine.factory.class",
            T.CLASS,
            None,
            "Java SSLEngine factory.",
            L,
            unsupported=(
                "Java SSLEngine factories cannot run in Python; pass a configured ssl.SSLContext "
                "as ssl.context"
            ),
        ),
        _k(
            "ssl.ca.location",
            T.STRING,
            None,
            "librdkafka name: path of a PEM file of trusted "
            "CA certificates (same as ssl.truststore.location with type PEM).",
            L,
            python_only=True,
        ),
        _k(
            "ssl.certificate.location",
            T.STRING,
            None,
            "librdkafka name: path of the client certificate (chain) PEM file.",
            L,
            python_only=True,
        ),
        _k(
            "ssl.key.location",
            T.STRING,
            None,
            "librdkafka name: path of the client private key "
            "PEM file (its password in ssl.key.password).",
            L,
            python_only=True,
        ),
        _k(
            "ssl.context",
            T.OBJECT,
            None,
            "A ready ssl.SSLContext to use for TLS connections; "
            "when set, the other ssl.* keys are ignored.",
            M,
            _ssl_context,
            python_only=True,
        ),
        # ----- SASL
        _k(
            "sasl.mechanism",
            T.STRING,
            "GSSAPI",
            "SASL mechanism: PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512 or OAUTHBEARER. GSSAPI (Kerberos, the Java default) is not "
            "supported and is refused when SASL is used.",
            M,
            _SASL_MECHANISMS,
        ),
        _k(
            "sasl.jaas.config",
            T.PASSWORD,
            None,
            "A JAAS login entry as in Java, e.g. "
            "'org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="u" password="p";\'; its username and password are used for PLAIN '
            "and SCRAM.",
            M,
        ),
        _k(
            "sasl.username",
            T.STRING,
            None,
            "User name for PLAIN and SCRAM (instead of sasl.jaas.config).",
            M,
            python_only=True,
        ),
        _k(
            "sasl.password",
            T.PASSWORD,
            None,
            "Password for PLAIN and SCRAM (instead of sasl.jaas.config).",
            M,
            python_only=True,
        ),
        _k(
            "sasl.oauthbearer.token.provider",
            T.OBJECT,
            None,
            "For OAUTHBEARER: a callable "
            "returning the access token (a str, or an object with a 'token' attribute), or an "
            "object with a token() method.",
            M,
            _token_provider,
            python_only=True,
        ),
        _k(
            "sasl.oauthbearer.token.callback",
            T.OBJECT,
            None,
            "Another name for "
            "sasl.oauthbearer.token.provider (the network layer reads this one; setting either "
            "fills both).",
            L,
            _token_provider,
            python_only=True,
        ),
        _k(
            "sasl.oauthbearer.extensions",
            T.OBJECT,
            None,
            "For OAUTHBEARER: a mapping of SASL extensions (KIP-342) sent with the token.",
            L,
            _str_mapping,
            python_only=True,
        ),
        _k(
            "sasl.scram.tokenauth",
            T.BOOLEAN,
            False,
            "For SCRAM: authenticate with a delegation token (sends the tokenauth=true extension).",
            L,
            python_only=True,
        ),
        _k(
            "sasl.client.callback.handler.class",
            T.CLASS,
            None,
            "Java SASL client callback handler.",
            M,
            unsupported=(
                "Java callback handlers cannot run in Python; PLAIN and SCRAM credentials come "
                "from sasl.username and sasl.password (or sasl.jaas.config), OAUTHBEARER tokens "
                "from sasl.oauthbearer.token.provider"
            ),
        ),
        _k(
            "sasl.login.callback.handler.class",
            T.CLASS,
            None,
            "Java SASL login callback handler.",
            M,
            unsupported=(
                "Java login callback handlers cannot run in Python; set "
                "sasl.oauthbearer.token.provider to a callable that returns the token"
            ),
        ),
        _k(
            "sasl.login.class",
            T.CLASS,
            None,
            "Java SASL login class.",
            M,
            unsupported=(
                "Java login classes cannot run in Python; set sasl.oauthbearer.token.provider "
                "(OAUTHBEARER) or sasl.username and sasl.password (PLAIN, SCRAM)"
            ),
        ),
        _k(
            "sasl.kerberos.service.name",
            T.STRING,
            None,
            "Kerberos service name of the brokers (GSSAPI).",
            M,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.kinit.cmd",
            T.STRING,
            "/usr/bin/kinit",
            "Kerberos kinit command (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.ticket.renew.window.factor",
            T.DOUBLE,
            0.8,
            "Kerberos ticket renewal point (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.ticket.renew.jitter",
            T.DOUBLE,
            0.05,
            "Kerberos ticket renewal jitter (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.min.time.before.relogin",
            T.LONG,
            60000,
            "Kerberos relogin interval (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.login.refresh.window.factor",
            T.DOUBLE,
            0.8,
            "Fraction of a credential's lifetime after which it is refreshed (OAUTHBEARER).",
            L,
            _Range(0.5, 1.0),
        ),
        _k(
            "sasl.login.refresh.window.jitter",
            T.DOUBLE,
            0.05,
            "OAUTHBEARER: a random share of the token's lifetime, up to this, added to "
            "sasl.login.refresh.window.factor when the refresh is scheduled, so that clients "
            "started together do not all refresh at once.",
            L,
            _Range(0.0, 0.25),
        ),
        _k(
            "sasl.login.refresh.min.period.seconds",
            T.SHORT,
            60,
            "OAUTHBEARER: the refresh is not scheduled sooner than this after a token was "
            "obtained.",
            L,
            _Range(0, 900),
        ),
        _k(
            "sasl.login.refresh.buffer.seconds",
            T.SHORT,
            300,
            "OAUTHBEARER: the refresh is scheduled at least this long before the token expires. "
            "When the token lives less than this plus sasl.login.refresh.min.period.seconds, it "
            "is refreshed half way through its remaining life.",
            L,
            _Range(0, 3600),
        ),
        _k(
            "sasl.login.connect.timeout.ms",
            T.INT,
            None,
            "Connect timeout of Java's HTTP token retrieval (OAUTHBEARER).",
            L,
            unsupported=_NO_TOKEN_HTTP,
        ),
        _k(
            "sasl.login.read.timeout.ms",
            T.INT,
            None,
            "Read timeout of Java's HTTP token retrieval (OAUTHBEARER).",
            L,
            unsupported=_NO_TOKEN_HTTP,
        ),
        _k(
            "sasl.login.retry.backoff.max.ms",
            T.LONG,
            10000,
            "OAUTHBEARER: upper bound of the wait before the token provider is called again "
            "after it failed.",
            L,
        ),
        _k(
            "sasl.login.retry.backoff.ms",
            T.LONG,
            100,
            "OAUTHBEARER: wait before the token provider is called again after it failed; "
            "doubles per failure up to sasl.login.retry.backoff.max.ms.",
            L,
        ),
        _k(
            "sasl.oauthbearer.scope.claim.name",
            T.STRING,
            "scope",
            "JWT claim holding the scope (Java's OAUTHBEARER login).",
            L,
            unsupported=_NO_TOKEN_CLAIMS,
        ),
        _k(
            "sasl.oauthbearer.sub.claim.name",
            T.STRING,
            "sub",
            "JWT claim holding the subject (Java's OAUTHBEARER login).",
            L,
            unsupported=_NO_TOKEN_CLAIMS,
        ),
        _k(
            "sasl.oauthbearer.token.endpoint.url",
            T.STRING,
            None,
            "OAuth token endpoint Java's login handler fetches tokens from.",
            M,
            unsupported=(
                "this client does not fetch tokens over HTTP; set sasl.oauthbearer.token.provider "
                "to a callable that fetches one and returns it"
            ),
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.url",
            T.STRING,
            None,
            "JWKS endpoint for validating tokens.",
            M,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.refresh.ms",
            T.LONG,
            3600000,
            "JWKS refresh interval for validating tokens.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
            T.LONG,
            10000,
            "JWKS retry backoff maximum.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
            T.LONG,
            100,
            "JWKS retry backoff.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.clock.skew.seconds",
            T.INT,
            30,
            "Allowed clock skew when validating tokens.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.expected.audience",
            T.LIST,
            None,
            "Audiences a validated token must name.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.expected.issuer",
            T.STRING,
            None,
            "Issuer a validated token must name.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
    ]


def _consumer_keys() -> list[ConfigKey]:
    return _common_keys("consumer") + [
        _k(
            "group.id",
            T.STRING,
            None,
            "Name of the consumer group. Needed for subscribe() and "
            "for committing offsets to Kafka.",
            H,
        ),
        _k(
            "group.instance.id",
            T.STRING,
            None,
            "Makes this consumer a static member of the "
            "group under this id: a restart within session.timeout.ms does not trigger a "
            "rebalance.",
            M,
            _group_instance_id,
        ),
        _k(
            "group.protocol",
            T.STRING,
            "classic",
            "Group protocol: classic (JoinGroup/SyncGroup) "
            "or consumer (KIP-848 broker-side assignment).",
            H,
            _OneOf("classic", "consumer"),
        ),
        _k(
            "group.remote.assignor",
            T.STRING,
            None,
            "Broker-side assignor to ask for when "
            "group.protocol is consumer; the broker picks one when unset.",
            M,
        ),
        _k(
            "session.timeout.ms",
            T.INT,
            45000,
            "The group coordinator removes a member it has "
            "not heard a heartbeat from for this long. Must lie within the broker's "
            "group.min/max.session.timeout.ms.",
            H,
            _Range(1),
        ),
        _k(
            "heartbeat.interval.ms",
            T.INT,
            3000,
            "Time between heartbeats to the group "
            "coordinator; keep it below a third of session.timeout.ms.",
            H,
            _Range(1),
        ),
        _k(
            "max.poll.interval.ms",
            T.INT,
            300000,
            "Longest allowed gap between two poll() calls "
            "of a group member; past it the member leaves the group so its partitions move.",
            M,
            _Range(1),
        ),
        _k(
            "max.poll.records",
            T.INT,
            500,
            "Most records one poll() returns. It does not change how much is fetched.",
            M,
            _Range(1),
        ),
        _k(
            "partition.assignment.strategy",
            T.LIST,
            (
                "org.apache.kafka.clients.consumer.RangeAssignor",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            ),
            "Assignors this member supports, by preference: Java class names, short names "
            "(range, roundrobin, sticky, cooperative-sticky), assignor objects or import paths.",
            M,
            _ListOf(_assignor),
        ),
        _k(
            "enable.auto.commit",
            T.BOOLEAN,
            True,
            "Commit consumed positions in the background "
            "every auto.commit.interval.ms. Off by default when group.id is unset.",
            M,
        ),
        _k(
            "auto.commit.interval.ms",
            T.INT,
            5000,
            "Interval between automatic offset commits.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "auto.offset.reset",
            T.STRING,
            "latest",
            "Where to start when there is no valid "
            "committed offset: earliest, latest, none (raise NoOffsetForPartitionError), or "
            "by_duration: and an ISO-8601 duration, e.g. by_duration:PT1H (KIP-1106: the first "
            "record of that last stretch of time; the log end when none is that recent).",
            M,
            AutoOffsetResetValidator(),
        ),
        _k(
            "fetch.min.bytes",
            T.INT,
            1,
            "The broker waits for at least this many bytes (or "
            "fetch.max.wait.ms) before answering a fetch.",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "fetch.max.bytes",
            T.INT,
            52428800,
            "Most bytes a fetch response should carry "
            "(a larger first batch is still returned so the consumer can progress).",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "fetch.max.wait.ms",
            T.INT,
            500,
            "Longest time the broker holds a fetch waiting for fetch.min.bytes.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "max.partition.fetch.bytes",
            T.INT,
            1048576,
            "Most bytes returned per partition in "
            "one fetch (a larger first batch is still returned).",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "isolation.level",
            T.STRING,
            "read_uncommitted",
            "read_committed hides records of "
            "aborted and still-open transactions; read_uncommitted returns everything.",
            M,
            _OneOf("read_uncommitted", "read_committed"),
        ),
        _k("check.crcs", T.BOOLEAN, True, "Verify the CRC of every record batch fetched.", L),
        _k(
            "key.deserializer",
            T.CLASS,
            None,
            "How record keys are decoded: a name (bytes, str, "
            "int, long, short, float, double, uuid, json), a Java deserializer class name, a "
            "callable, an object with deserialize(), a class, or an import path. Unset means "
            "raw bytes (Java requires the key; here bytes is the default).",
            H,
            _deserializer_spec,
        ),
        _k(
            "value.deserializer",
            T.CLASS,
            None,
            "How record values are decoded; same forms as key.deserializer. Unset means raw bytes.",
            H,
            _deserializer_spec,
        ),
        _k(
            "key.deserializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string key "
            "deserializer (default UTF-8), as Java's StringDeserializer reads it.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "value.deserializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string value deserializer (default UTF-8).",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "deserializer.encoding",
            T.STRING,
            None,
            "Text encoding for both string deserializers when the key/value specific key is unset.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "default.api.timeout.ms",
            T.INT,
            60000,
            "Timeout of blocking consumer calls that take "
            "no explicit timeout (commit_sync, committed, position, ...).",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "allow.auto.create.topics",
            T.BOOLEAN,
            True,
            "Let the broker create a subscribed or "
            "assigned topic that does not exist (if the broker allows it).",
            M,
        ),
        _k(
            "exclude.internal.topics",
            T.BOOLEAN,
            True,
            "Keep internal topics (__consumer_offsets) out of pattern subscriptions.",
            M,
        ),
        _k(
            "interceptor.classes",
            T.LIST,
            (),
            "ConsumerInterceptor objects, classes or import "
            "paths; each sees records before poll() returns them and offsets after commits.",
            L,
            _ListOf(_interceptor),
        ),
        _k(
            "internal.leave.group.on.close",
            T.BOOLEAN,
            True,
            "Send LeaveGroup on close() so the group rebalances at once.",
            L,
            internal=True,
        ),
        _k(
            "internal.throw.on.fetch.stable.offset.unsupported",
            T.BOOLEAN,
            False,
            "Fail when the broker cannot wait for stable offsets in OffsetFetch (KIP-447).",
            L,
            internal=True,
        ),
        _k(
            "enable.fetch.sessions",
            T.BOOLEAN,
            True,
            "Use incremental fetch sessions (KIP-227); "
            "false sends a full fetch request every time.",
            L,
            python_only=True,
        ),
        _k(
            "internal.cooperative.rejoin.delay.ms",
            T.INT,
            0,
            "Wait this long before the "
            "follow-up rejoin of a cooperative rebalance (0: at once, as Java). Helps with brokers "
            "that answer a pending SyncGroup only periodically.",
            L,
            _NON_NEGATIVE,
            internal=True,
            python_only=True,
        ),
    ]


def _producer_keys() -> list[ConfigKey]:
    return _common_keys("producer") + [
        _k(
            "acks",
            T.STRING,
            "all",
            "Acknowledgements the leader waits for: 0 (none), 1 (leader "
            "only), all/-1 (all in-sync replicas). Ints are accepted too.",
            H,
            _ACKS,
        ),
        _k(
            "compression.type",
            T.STRING,
            "none",
            "Codec for record batches: none, gzip, snappy, lz4 or zstd.",
            H,
            _OneOf("none", "gzip", "snappy", "lz4", "zstd"),
        ),
        _k(
            "batch.size",
            T.INT,
            16384,
            "Target size in bytes of one partition's batch.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "linger.ms",
            T.LONG,
            0,
            "How long send() may hold records to fill a batch before sending it.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "buffer.memory",
            T.LONG,
            33554432,
            "Most bytes of records waiting to be sent; send() "
            "blocks up to max.block.ms when it is full.",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "max.request.size",
            T.INT,
            1048576,
            "Largest produce request (and record) in bytes.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "max.block.ms",
            T.LONG,
            60000,
            "Longest time send() blocks for metadata or buffer space.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "delivery.timeout.ms",
            T.INT,
            120000,
            "Upper bound on the time to report success or failure of a send().",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "retries",
            T.INT,
            2147483647,
            "How often a failed batch is resent (within delivery.timeout.ms).",
            H,
            _NON_NEGATIVE,
        ),
        _k(
            "max.in.flight.requests.per.connection",
            T.INT,
            5,
            "Unanswered requests allowed per connection.",
            L,
            _Range(1),
        ),
        _k(
            "enable.idempotence",
            T.BOOLEAN,
            True,
            "Give batches a producer id and sequence "
            "numbers so the broker drops duplicates of retried sends.",
            L,
        ),
        _k(
            "transactional.id",
            T.STRING,
            None,
            "Transactions are not supported by this producer; must stay unset.",
            L,
            _unsupported_when_set,
        ),
        _k(
            "transaction.timeout.ms",
            T.INT,
            60000,
            "Transaction timeout.",
            L,
            unsupported=(
                "transactions are not supported by this producer (transactional.id must stay unset)"
            ),
        ),
        _k(
            "metadata.max.idle.ms",
            T.LONG,
            300000,
            "Forget metadata of a topic not produced to for this long.",
            L,
            _Range(5000),
        ),
        _k(
            "partitioner.class",
            T.CLASS,
            None,
            "A callable (key_bytes, all_partitions, "
            "available_partitions) -> partition, or an import path; unset uses the Java-compatible "
            "murmur2 key hash and sticky partitions for null keys.",
            M,
        ),
        _k(
            "partitioner.ignore.keys",
            T.BOOLEAN,
            False,
            "Ignore keys when choosing partitions (always sticky).",
            M,
        ),
        _k(
            "partitioner.adaptive.partitioning.enable",
            T.BOOLEAN,
            True,
            "Favour faster brokers for records without a key (Java).",
            L,
            unsupported=(
                "this producer does not measure broker latency, so it cannot adapt; false (plain "
                "sticky partitions) is what it does anyway"
            ),
            honoured=(False,),
        ),
        _k(
            "partitioner.availability.timeout.ms",
            T.LONG,
            0,
            "Java: stop choosing a partition whose leader has not taken records for this long "
            "(0: never).",
            L,
            unsupported=(
                "this producer does not track how fast each broker takes records, so it cannot "
                "avoid a slow one; leave it 0"
            ),
        ),
        _k(
            "key.serializer",
            T.CLASS,
            None,
            "How keys are encoded: bytes, str, int, long, short, "
            "float, double, uuid, json, a Java serializer class name, a callable or an object "
            "with serialize(). Unset means the key must already be bytes.",
            H,
            _serializer_spec,
        ),
        _k(
            "value.serializer",
            T.CLASS,
            None,
            "How values are encoded; same forms as key.serializer.",
            H,
            _serializer_spec,
        ),
        _k(
            "key.serializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string key "
            "serializer (default UTF-8), as Java's StringSerializer reads it.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "value.serializer.encoding",
            T.STRING,
            None,
            "Text encoding of the string value serializer (default UTF-8).",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "serializer.encoding",
            T.STRING,
            None,
            "Text encoding for both string serializers when the key/value specific key is unset.",
            L,
            _encoding,
            python_only=True,
        ),
        _k(
            "interceptor.classes",
            T.LIST,
            (),
            "Producer interceptors (Java).",
            L,
            unsupported="this producer does not call interceptors; wrap send() instead",
        ),
    ]


def _admin_keys() -> list[ConfigKey]:
    keys = _common_keys("admin")
    return [k for k in keys] + [
        _k(
            "default.api.timeout.ms",
            T.INT,
            60000,
            "Timeout of admin calls that take no explicit timeout.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "retries",
            T.INT,
            2147483647,
            "How often a failed admin request is retried (within its timeout).",
            L,
            _NON_NEGATIVE,
        ),
    ]


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


# --------------------------------------------------------------------------- config classes


class AbstractConfig(Mapping[str, Any]):
    """A validated, read-only mapping of Java configuration keys to values (defaults filled).

    Build it from a mapping of Java keys, snake_case keywords, or both; the same key given
    twice with different values raises :class:`ConfigError`. ``config[key]`` returns the parsed
    value: ``int``/``float``/``bool``/``str``/``None``, a ``tuple`` for lists, a
    :class:`Password` for secrets, and the user's object for class-typed keys.

    Thread-safety: immutable after construction; safe to share between threads.
    """

    _DEFINITIONS: ClassVar[dict[str, ConfigKey]] = {}
    _SNAKE: ClassVar[dict[str, str]] = {}
    _CLIENT_ID_PREFIX: ClassVar[str] = "client"
    _client_id_seq: ClassVar[itertools.count[int]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._client_id_seq = itertools.count(1)

    def __init__(self, configs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Validate ``configs`` merged with snake_case ``kwargs`` and fill in the defaults.

        Raises :class:`~kafkaconsumer.errors.ConfigError` for an unknown key or a bad value.
        """
        if configs is not None and not isinstance(configs, Mapping):
            raise ConfigError(
                f"configs must be a mapping of config keys to values, got {type(configs).__name__}"
            )
        if isinstance(configs, AbstractConfig):
            # Re-wrapping a config keeps its generated client.id instead of minting a new one.
            inherited = configs.originals()
            inherited.setdefault("client.id", configs["client.id"])
            configs = inherited
        originals: dict[str, Any] = {}
        for source in (configs or {}, kwargs):
            for raw_key, value in source.items():
                name = self._canonical(raw_key)
                if name in originals and not _same(originals[name], value):
                    raise ConfigError(
                        f"{name} is given twice with different values "
                        f"({_show(self._DEFINITIONS[name], originals[name])} and "
                        f"{_show(self._DEFINITIONS[name], value)})"
                    )
                originals[name] = value
        self._originals = originals
        values: dict[str, Any] = {}
        for name, key in self._DEFINITIONS.items():
            if name in originals:
                value = _parse(key, originals[name])
                if key.validator is not None:
                    value = key.validator(name, value)
                # None is how a Python caller leaves a key unset: never a refused value.
                if key.unsupported and value is not None and not _same(value, key.default):
                    _refuse_unless_honoured(key, value)
            else:
                value = key.default
            values[name] = value
        self._values = values
        self._post_process()

    # -- mapping protocol ------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            name = self._SNAKE.get(key)
            if name is not None:
                return self._values[name]
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __repr__(self) -> str:
        changed = ", ".join(
            f"{k!r}: {_show(self._DEFINITIONS[k], v)}"
            for k, v in self._values.items()
            if k in self._originals or v != self._DEFINITIONS[k].default
        )
        return f"{type(self).__name__}({{{changed}}})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AbstractConfig):
            return type(other) is type(self) and other._values == self._values
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuild from the originals, keeping a generated client.id.
        originals = dict(self._originals)
        originals.setdefault("client.id", self._values["client.id"])
        return (type(self), (originals,))

    # -- queries ----------------------------------------------------------------------------
    @classmethod
    def definitions(cls) -> Mapping[str, ConfigKey]:
        """Every key this config understands, by Java name."""
        return dict(cls._DEFINITIONS)

    @classmethod
    def definition(cls, key: str) -> ConfigKey:
        """The definition of one key (Java name or snake_case); ConfigError when unknown."""
        return cls._DEFINITIONS[cls._canonical(key)]

    @classmethod
    def config_names(cls) -> frozenset[str]:
        """All Java key names (Java ``ConsumerConfig.configNames()``)."""
        return frozenset(cls._DEFINITIONS)

    def originals(self) -> dict[str, Any]:
        """The keys the user set explicitly (Java names) with the values as given."""
        return dict(self._originals)

    def is_set(self, key: str) -> bool:
        """True when the user set ``key`` explicitly."""
        return self._canonical(key) in self._originals

    def get_password(self, key: str) -> str | None:
        """The secret of a password-typed key, or None when unset."""
        value = self[self._canonical(key)]
        if value is None:
            return None
        if isinstance(value, Password):
            return value.value
        raise ConfigError(f"{key} is not a password key")

    def replace(self, configs: Mapping[str, Any] | None = None, **kwargs: Any) -> AbstractConfig:
        """A new config of the same class with some keys changed (the originals plus these)."""
        merged = dict(self._originals)
        for source in (configs or {}, kwargs):
            for raw_key, value in source.items():
                merged[self._canonical(raw_key)] = value
        return type(self)(merged)

    def jaas_config(self) -> JaasConfig | None:
        """The parsed ``sasl.jaas.config``, or None when unset."""
        raw = self._values.get("sasl.jaas.config")
        if raw is None:
            return None
        return parse_jaas_config(raw.value)

    def sasl_credentials(self) -> tuple[str, str] | None:
        """``(username, password)`` for PLAIN/SCRAM: from ``sasl.username``/``sasl.password``
        when set, else from the ``username``/``password`` options of ``sasl.jaas.config``."""
        user = self._values.get("sasl.username")
        password = self._values.get("sasl.password")
        if user is not None and password is not None:
            return user, password.value
        jaas = self.jaas_config()
        if jaas is not None and "username" in jaas.options and "password" in jaas.options:
            return jaas.options["username"], jaas.options["password"]
        return None

    def bootstrap_addresses(self) -> list[tuple[str, int]]:
        """``bootstrap.servers`` split into ``(host, port)`` pairs."""
        return parse_bootstrap_servers(self._values["bootstrap.servers"])

    # -- internals ------------------------------------------------------------------------------
    @classmethod
    def _canonical(cls, raw_key: Any) -> str:
        if not isinstance(raw_key, str):
            raise ConfigError(f"config keys must be strings, got {raw_key!r}")
        if raw_key in cls._DEFINITIONS:
            return raw_key
        name = cls._SNAKE.get(raw_key)
        if name is not None:
            return name
        from kafkaconsumer.porting import porting_hint

        advice = porting_hint(raw_key, cls.__name__)
        if advice is not None:
            raise ConfigError(f"unknown {cls.__name__} key {raw_key!r}, {advice}")
        import difflib  # only on this error path: it costs a few ms at import

        candidates = list(cls._DEFINITIONS) + list(cls._SNAKE)
        close = difflib.get_close_matches(raw_key, candidates, n=1, cutoff=0.6)
        if not close:
            close = difflib.get_close_matches(
                raw_key.replace("_", "."), list(cls._DEFINITIONS), n=1, cutoff=0.5
            )
        hint = ""
        if close:
            suggestion = cls._SNAKE.get(close[0], close[0])
            hint = f"; did you mean {suggestion!r}?"
        raise ConfigError(f"unknown {cls.__name__} key {raw_key!r}{hint}")

    def _post_process(self) -> None:
        v = self._values
        # Java: setting reconnect.backoff.ms alone turns the exponential backoff off.
        if (
            "reconnect.backoff.ms" in self._originals
            and "reconnect.backoff.max.ms" not in self._originals
        ):
            v["reconnect.backoff.max.ms"] = v["reconnect.backoff.ms"]
        if v["retry.backoff.ms"] > v["retry.backoff.max.ms"]:
            logger.warning(
                "retry.backoff.ms (%s) is greater than retry.backoff.max.ms (%s); a constant "
                "backoff of %s ms is used",
                v["retry.backoff.ms"],
                v["retry.backoff.max.ms"],
                v["retry.backoff.max.ms"],
            )
        self._check_security()
        if not v["client.id"]:
            v["client.id"] = self._generated_client_id()

    def _generated_client_id(self) -> str:
        return f"{self._CLIENT_ID_PREFIX}-{next(self._client_id_seq)}"

    def _check_security(self) -> None:
        v = self._values
        protocol = v["security.protocol"]
        provider, callback = (
            v["sasl.oauthbearer.token.provider"],
            v["sasl.oauthbearer.token.callback"],
        )
        if provider is not None and callback is not None and provider is not callback:
            raise ConfigError(
                "set sasl.oauthbearer.token.provider or sasl.oauthbearer.token.callback, not both"
            )
        if provider is None and callback is not None:
            v["sasl.oauthbearer.token.provider"] = callback
        elif provider is not None and callback is None:
            # The network layer calls the callback; an object with token() exposes that method.
            v["sasl.oauthbearer.token.callback"] = (
                provider if callable(provider) else provider.token
            )
        if v["sasl.username"] is not None and v["sasl.password"] is None:
            raise ConfigError("sasl.username is set but sasl.password is not")
        if v["sasl.password"] is not None and v["sasl.username"] is None:
            raise ConfigError("sasl.password is set but sasl.username is not")
        if v["sasl.jaas.config"] is not None:
            self.jaas_config()  # raises on a malformed entry
        for store in ("ssl.keystore", "ssl.truststore"):
            if (
                v[f"{store}.location"] is not None
                and self.is_set(f"{store}.type")
                and v[f"{store}.type"] != "PEM"
            ):
                raise ConfigError(
                    f"{store}.type={v[f'{store}.type']} cannot be read by this client; convert "
                    f"the store to PEM and set {store}.type=PEM"
                )
        if v["ssl.keystore.key"] is not None and v["ssl.keystore.certificate.chain"] is None:
            raise ConfigError("ssl.keystore.key is set but ssl.keystore.certificate.chain is not")
        if not protocol.startswith("SASL_"):
            return
        mechanism = v["sasl.mechanism"]
        if mechanism == "GSSAPI":
            raise ConfigError(
                f"security.protocol={protocol} with sasl.mechanism=GSSAPI (Kerberos, the Java "
                "default): GSSAPI is not supported; set sasl.mechanism to PLAIN, SCRAM-SHA-256, "
                "SCRAM-SHA-512 or OAUTHBEARER"
            )
        if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            if self.sasl_credentials() is None:
                raise ConfigError(
                    f"sasl.mechanism={mechanism} needs credentials: set sasl.username and "
                    "sasl.password, or sasl.jaas.config with username and password options"
                )
        elif mechanism == "OAUTHBEARER" and v["sasl.oauthbearer.token.provider"] is None:
            raise ConfigError(
                "sasl.mechanism=OAUTHBEARER needs sasl.oauthbearer.token.provider "
                "(a callable returning the access token)"
            )


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects with odd __eq__ are simply "different"
        return a is b


def _refuse_unless_honoured(key: ConfigKey, value: Any) -> None:
    if any(_same(value, ok) for ok in key.honoured):
        return
    if key.default is None or key.default == ():
        accepted = ["unset"]
    else:
        accepted = [_show(key, key.default)]
    accepted += [_show(key, ok) for ok in key.honoured]
    hint = "leave it unset" if accepted == ["unset"] else f"it takes only {' or '.join(accepted)}"
    raise ConfigError(
        f"{key.name}={_show(key, value)} cannot work in this client ({hint}): {key.unsupported}"
    )


def _show(key: ConfigKey, value: Any) -> str:
    if key.type is ConfigType.PASSWORD and value is not None:
        return Password.HIDDEN
    return repr(value)


def _finish(cls: type[AbstractConfig], keys: list[ConfigKey]) -> None:
    cls._DEFINITIONS = _index(keys)
    cls._SNAKE = {k.snake_name: k.name for k in keys}


#: Requests in flight per broker connection for the clients whose configuration has no
#: ``max.in.flight.requests.per.connection`` key (the consumer and the admin client): Java's
#: consumer builds its network client with this fixed bound. Not a key: it cannot be set.
CONSUMER_MAX_IN_FLIGHT_REQUESTS = 100


#: Keys of one group protocol that the other refuses (Java ConsumerConfig's unsupported lists).
CLASSIC_PROTOCOL_ONLY = (
    "partition.assignment.strategy",
    "heartbeat.interval.ms",
    "session.timeout.ms",
)
CONSUMER_PROTOCOL_ONLY = ("group.remote.assignor",)


class ConsumerConfig(AbstractConfig):
    """Configuration of :class:`~kafkaconsumer.consumer.KafkaConsumer` (Java ``ConsumerConfig``).

    ``ConsumerConfig({"bootstrap.servers": "localhost:9092"}, group_id="g")``. Beyond the Java
    checks it refuses ``heartbeat.interval.ms >= session.timeout.ms`` for group members and a
    SASL set-up without credentials. When ``client.id`` is empty it becomes
    ``consumer-<group.id>-<n>`` as in Java; when ``group.id`` is unset ``enable.auto.commit``
    defaults to false (and may not be set to true).

    Thread-safety: immutable after construction; safe to share between threads.
    """

    _CLIENT_ID_PREFIX = "consumer"

    def _generated_client_id(self) -> str:
        v = self._values
        group = v["group.id"]
        part = v["group.instance.id"] or str(next(self._client_id_seq))
        return f"consumer-{group if group is not None else 'null'}-{part}"

    def _post_process(self) -> None:
        v = self._values
        if v["group.id"] is None:
            if "enable.auto.commit" not in self._originals:
                v["enable.auto.commit"] = False
            elif v["enable.auto.commit"]:
                raise ConfigError("enable.auto.commit cannot be true when group.id is unset")
        # As Java's ConsumerConfig: a key the chosen group protocol does not use is refused
        # (the consumer protocol's timers and assignor are the broker's), not ignored.
        protocol = str(v["group.protocol"]).lower()
        other = CLASSIC_PROTOCOL_ONLY if protocol == "consumer" else CONSUMER_PROTOCOL_ONLY
        refused = [
            k
            for k in other
            if self._originals.get(k) is not None and str(self._originals[k]).strip()
        ]
        if refused:
            raise ConfigError(f"{', '.join(refused)} cannot be set when group.protocol={protocol}")
        if v["group.id"] is not None and v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
            raise ConfigError(
                f"heartbeat.interval.ms ({v['heartbeat.interval.ms']}) must be lower than "
                f"session.timeout.ms ({v['session.timeout.ms']})"
            )
        if v["group.id"] is not None and v["group.id"] == "":
            logger.warning("group.id is an empty string; Java treats this as deprecated")
        super()._post_process()


class ProducerConfig(AbstractConfig):
    """Configuration of :class:`~kafkaconsumer.producer.KafkaProducer` (Java ``ProducerConfig``).

    Thread-safety: immutable after construction; safe to share between threads.
    """

    _CLIENT_ID_PREFIX = "producer"

    def _post_process(self) -> None:
        v = self._values
        if v["acks"] == "-1":
            v["acks"] = "all"
        if v["enable.idempotence"] and v["acks"] != "all":
            if "enable.idempotence" in self._originals:
                raise ConfigError("enable.idempotence=true requires acks=all")
            v["enable.idempotence"] = False  # Java: implicit idempotence yields to explicit acks
        super()._post_process()


class AdminClientConfig(AbstractConfig):
    """Configuration of :class:`~kafkaconsumer.admin.KafkaAdminClient` (Java ``AdminClientConfig``).

    Thread-safety: immutable after construction; safe to share between threads.
    """

    _CLIENT_ID_PREFIX = "adminclient"


_finish(ConsumerConfig, _consumer_keys())
_finish(ProducerConfig, _producer_keys())
_finish(AdminClientConfig, _admin_keys())


def config_default(key: str) -> Any:
    """The default of a configuration key (the consumer's, else the producer's or the admin
    client's), for settings that tests build from plain mappings: read from the key
    definitions, never restated."""
    for cls in (ConsumerConfig, ProducerConfig, AdminClientConfig):
        definition = cls._DEFINITIONS.get(key)
        if definition is not None:
            return definition.default
    raise KeyError(key)


def config_value(config: Mapping[str, Any], key: str) -> Any:
    """``config[key]``, or the key's default (:func:`config_default`) when ``config`` (a plain
    mapping a test built) lacks it or leaves it None."""
    value = config.get(key)
    return config_default(key) if value is None else value

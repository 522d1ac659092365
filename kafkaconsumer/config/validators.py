"""Validators of single keys: bootstrap addresses, TLS and SASL objects, encodings, and the
keys that name a plugin (assignors, interceptors, metric reporters, (de)serializers).

Each takes the key's name and its parsed value and returns the value (or raises
:class:`~kafkaconsumer.errors.ConfigError` naming the key); the generic range and choice checks
are in ``config_def``. A plugin given as an import path must import when the client is built
(loaded through :mod:`kafkaconsumer.utils.loader`, on the first such key); a (de)serializer spec
is checked against the names :mod:`kafkaconsumer.serialization` knows, without instantiating it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from kafkaconsumer.config.config_def import _OneOf
from kafkaconsumer.errors import ConfigError

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
    from kafkaconsumer.utils.loader import resolve_object

    resolve_object(value, key=name)
    return value


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


#: Java's login callback handler that fetches OAUTHBEARER tokens from an identity provider
#: (and the name it had in the ``secured`` package of Kafka 3.1 to 3.9);
#: network/oauth_token_retriever.py implements it.
OAUTH_LOGIN_CALLBACK_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
)
OAUTH_DEFAULT_JWT_RETRIEVER = "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"
#: The ``sasl.oauthbearer.jwt.retriever.class`` values other than the default that are built in.
OAUTH_JWT_RETRIEVERS = (
    "org.apache.kafka.common.security.oauthbearer.ClientCredentialsJwtRetriever",
    "org.apache.kafka.common.security.oauthbearer.FileJwtRetriever",
    "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever",
)
OAUTH_DEFAULT_JWT_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"
OAUTH_JWT_VALIDATORS = ("org.apache.kafka.common.security.oauthbearer.ClientJwtValidator",)


class _JavaClassIn:
    """Validator of a key naming one of a few Java classes this client implements itself.

    Thread-safety: immutable.
    """

    def __init__(self, classes: tuple[str, ...], reason: str) -> None:
        self.classes = classes
        self.reason = reason

    def __call__(self, name: str, value: Any) -> Any:
        if value is None or value in self.classes:
            return value
        raise ConfigError(f"{name}={value!r} cannot work in this client: {self.reason}")

    def describe(self) -> str:
        return "one of " + ", ".join(c.rsplit(".", 1)[1] for c in self.classes)


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
        _importable(name, value)
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

"""Client configuration: every Java key with its default, type and validation.

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

The modules: ``config_def`` (key definitions and parsing), ``common_client_configs``,
``consumer_config``, ``producer_config`` and ``admin_client_config`` (each client's key table
and class; every default is written there and nowhere else), ``abstract_config``,
``jaas_config`` and ``validators`` (checks of single keys). Code handed a plain mapping reads a
missing key's default with :func:`config_default`, never restating it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkaconsumer.config.abstract_config import AbstractConfig
from kafkaconsumer.config.config_def import ConfigKey, ConfigType, Importance, Password
from kafkaconsumer.config.consumer_config import (
    CLASSIC_PROTOCOL_ONLY,
    CONSUMER_MAX_IN_FLIGHT_REQUESTS,
    CONSUMER_PROTOCOL_ONLY,
    ConsumerConfig,
)
from kafkaconsumer.config.validators import JMX_REPORTER, KNOWN_ASSIGNORS, parse_bootstrap_servers

if TYPE_CHECKING:
    from kafkaconsumer.config.admin_client_config import AdminClientConfig
    from kafkaconsumer.config.jaas_config import JaasConfig, parse_jaas_config
    from kafkaconsumer.config.producer_config import ProducerConfig

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
    "CLASSIC_PROTOCOL_ONLY",
    "CONSUMER_PROTOCOL_ONLY",
    "JMX_REPORTER",
    "KNOWN_ASSIGNORS",
    "config_default",
    "config_value",
]

# The producer's and the admin client's key tables, and the JAAS parser, load when first asked
# for, so that a consumer's start-up does not pay for them.
_LAZY = {
    "ProducerConfig": "kafkaconsumer.config.producer_config",
    "AdminClientConfig": "kafkaconsumer.config.admin_client_config",
    "JaasConfig": "kafkaconsumer.config.jaas_config",
    "parse_jaas_config": "kafkaconsumer.config.jaas_config",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def config_default(key: str) -> Any:
    """The default of a configuration key (the consumer's, else the producer's or the admin
    client's), for settings that tests build from plain mappings: read from the key
    definitions, never restated."""
    definition = ConsumerConfig._DEFINITIONS.get(key)
    # The other clients' tables load only for a key the consumer lacks.
    if definition is None:
        from kafkaconsumer.config.producer_config import ProducerConfig

        definition = ProducerConfig._DEFINITIONS.get(key)
    if definition is None:
        from kafkaconsumer.config.admin_client_config import AdminClientConfig

        definition = AdminClientConfig._DEFINITIONS.get(key)
    if definition is None:
        raise KeyError(key)
    return definition.default


def config_value(config: Mapping[str, Any], key: str) -> Any:
    """``config[key]``, or the key's default (:func:`config_default`) when ``config`` (a plain
    mapping a test built) lacks it or leaves it None."""
    value = config.get(key)
    return config_default(key) if value is None else value

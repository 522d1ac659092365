"""The validated, read-only configuration every client takes (Java ``AbstractConfig``)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from kafkaconsumer.config.config_def import ConfigKey, ConfigType, Password, _index, _parse
from kafkaconsumer.config.validators import OAUTH_LOGIN_CALLBACK_HANDLERS, parse_bootstrap_servers
from kafkaconsumer.errors import ConfigError

if TYPE_CHECKING:
    from kafkaconsumer.config.jaas_config import JaasConfig

logger = logging.getLogger(__name__)


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
        # config.providers.<name>.class / .param.<option>: read by the providers, not keys.
        provider_props: dict[str, Any] = {}
        for source in (configs or {}, kwargs):
            for raw_key, value in source.items():
                if isinstance(raw_key, str) and raw_key.startswith("config.providers."):
                    provider_props[raw_key] = value
                    continue
                name = self._canonical(raw_key)
                if name in originals and not _same(originals[name], value):
                    raise ConfigError(
                        f"{name} is given twice with different values "
                        f"({_show(self._DEFINITIONS[name], originals[name])} and "
                        f"{_show(self._DEFINITIONS[name], value)})"
                    )
                originals[name] = value
        if originals.get("config.providers") or provider_props:
            from kafkaconsumer.config.config_provider import resolve_config_variables

            originals = resolve_config_variables(originals, provider_props)
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
        # Loaded with the first JAAS entry: most clients never set one.
        from kafkaconsumer.config.jaas_config import parse_jaas_config

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
        """``bootstrap.servers`` split into ``(host, port)`` pairs (for callers of this class;
        the network client parses the setting itself)."""
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
        from kafkaconsumer.config.porting import porting_hint

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
        elif mechanism == "OAUTHBEARER":
            handler = v["sasl.login.callback.handler.class"] in OAUTH_LOGIN_CALLBACK_HANDLERS
            provider_set = v["sasl.oauthbearer.token.provider"] is not None
            if handler and provider_set:
                raise ConfigError(
                    "set sasl.oauthbearer.token.provider or sasl.login.callback.handler.class "
                    "(tokens fetched by the client), not both"
                )
            if handler and not v["sasl.oauthbearer.token.endpoint.url"]:
                raise ConfigError(
                    "sasl.login.callback.handler.class=OAuthBearerLoginCallbackHandler needs "
                    "sasl.oauthbearer.token.endpoint.url"
                )
            if not handler and not provider_set:
                raise ConfigError(
                    "sasl.mechanism=OAUTHBEARER needs sasl.oauthbearer.token.provider "
                    "(a callable returning the access token) or "
                    "sasl.login.callback.handler.class=org.apache.kafka.common.security."
                    "oauthbearer.OAuthBearerLoginCallbackHandler with "
                    "sasl.oauthbearer.token.endpoint.url"
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

"""A client of the Confluent schema-registry REST API (Java ``CachedSchemaRegistryClient``).

It reads schemas only: by id (what a framed record names) and by subject and version (what a
reader chooses). Schemas by id never change in a registry, so they are cached for the life of the
client; ``latest`` is asked once per subject and client as well, which makes a read see one reader
schema throughout.

Configuration keys, named as Confluent's clients name them:

* ``schema.registry.url``: one URL or several separated by commas, tried in turn;
* ``basic.auth.credentials.source``: ``USER_INFO`` (the default, from ``basic.auth.user.info``
  = ``user:password``) or ``URL`` (the ``user:password@`` part of the URL);
* ``bearer.auth.token``: a static bearer token (``bearer.auth.credentials.source`` =
  ``STATIC_TOKEN``, the only source supported);
* ``schema.registry.ssl.ca.location``, ``schema.registry.ssl.certificate.location``,
  ``schema.registry.ssl.key.location``: PEM files for HTTPS;
* ``schema.registry.request.timeout.ms``: the bound on each HTTP request (connect and read).
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkaconsumer.errors import ConfigError, KafkaError
from kafkaconsumer.formats.wire import SchemaId

logger = logging.getLogger(__name__)

__all__ = [
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "RegisteredSchema",
    "SchemaReference",
    "REGISTRY_CONFIG_DEFAULTS",
]

#: Every key the client accepts, with its default.
REGISTRY_CONFIG_DEFAULTS: dict[str, Any] = {
    "schema.registry.url": None,
    "basic.auth.credentials.source": "USER_INFO",
    "basic.auth.user.info": None,
    "bearer.auth.credentials.source": "STATIC_TOKEN",
    "bearer.auth.token": None,
    "schema.registry.ssl.ca.location": None,
    "schema.registry.ssl.certificate.location": None,
    "schema.registry.ssl.key.location": None,
    "schema.registry.request.timeout.ms": 30000,
}


class SchemaRegistryError(KafkaError):
    """The registry could not be reached or answered with an error.

    ``status`` is the HTTP status (None when no answer came), ``error_code`` the registry's own
    code (``40403``: schema not found, ``40401``: subject not found...).
    """

    def __init__(
        self, message: str, status: int | None = None, error_code: int | None = None
    ) -> None:
        """``status`` and ``error_code`` as the registry answered (None without an answer)."""
        super().__init__(message)
        self.status = status
        self.error_code = error_code


@dataclass(frozen=True)
class SchemaReference:
    """A schema a schema imports (``name`` as the importing schema spells it)."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry serves it."""

    schema_str: str
    schema_type: str = "AVRO"
    schema_id: SchemaId | None = None
    subject: str | None = None
    version: int | None = None
    references: tuple[SchemaReference, ...] = field(default_factory=tuple)


# The registry's error code for a schema it does not know.
_SCHEMA_NOT_FOUND = 40403


def _validated(config: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(config) - set(REGISTRY_CONFIG_DEFAULTS))
    if unknown:
        raise ConfigError(f"unknown schema-registry configuration {', '.join(unknown)}")
    merged = {**REGISTRY_CONFIG_DEFAULTS, **config}
    if not merged["schema.registry.url"]:
        raise ConfigError("schema.registry.url is required")
    source = str(merged["basic.auth.credentials.source"]).upper()
    if source not in ("USER_INFO", "URL"):
        raise ConfigError(
            f"basic.auth.credentials.source={source!r} is not supported (USER_INFO or URL)"
        )
    merged["basic.auth.credentials.source"] = source
    if str(merged["bearer.auth.credentials.source"]).upper() != "STATIC_TOKEN":
        raise ConfigError("bearer.auth.credentials.source must be STATIC_TOKEN")
    try:
        timeout_ms = float(merged["schema.registry.request.timeout.ms"])
    except (TypeError, ValueError):
        timeout_ms = -1.0
    if timeout_ms <= 0:
        raise ConfigError("schema.registry.request.timeout.ms must be a positive number")
    merged["schema.registry.request.timeout.ms"] = timeout_ms
    return merged


def _references(raw: Any) -> tuple[SchemaReference, ...]:
    return tuple(
        SchemaReference(str(ref["name"]), str(ref["subject"]), int(ref["version"]))
        for ref in raw or ()
    )


class SchemaRegistryClient:
    """Reads schemas from a Confluent-compatible schema registry, caching what it read.

    Thread-safety: safe to share between threads; the caches are guarded by ``_lock`` and HTTP
    requests run outside it (two threads may ask for the same schema once each).
    """

    def __init__(self, config: Mapping[str, Any] | str) -> None:
        """``config`` is a mapping of the keys in the module docstring, or the registry URL."""
        if isinstance(config, str):
            config = {"schema.registry.url": config}
        conf = _validated(config)
        self._timeout_s = conf["schema.registry.request.timeout.ms"] / 1000.0
        self._urls: list[str] = []
        self._auth: str | None = None
        for url in str(conf["schema.registry.url"]).split(","):
            url = url.strip().rstrip("/")
            if not url:
                continue
            parts = urllib.parse.urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(f"schema.registry.url {url!r} is not an http(s) URL")
            if parts.username is not None:
                if conf["basic.auth.credentials.source"] == "URL":
                    user_info = f"{parts.username}:{parts.password or ''}"
                    self._auth = "Basic " + base64.b64encode(user_info.encode()).decode()
                netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
                url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
            self._urls.append(url)
        if not self._urls:
            raise ConfigError("schema.registry.url names no URL")
        if conf["basic.auth.credentials.source"] == "USER_INFO" and conf["basic.auth.user.info"]:
            user_info = str(conf["basic.auth.user.info"])
            self._auth = "Basic " + base64.b64encode(user_info.encode()).decode()
        if conf["bearer.auth.token"]:
            if self._auth is not None:
                raise ConfigError("give basic.auth.* or bearer.auth.token, not both")
            self._auth = f"Bearer {conf['bearer.auth.token']}"
        self._ssl = self._ssl_context(conf)
        self._lock = threading.Lock()
        self._by_id: dict[SchemaId, RegisteredSchema] = {}  # guarded by _lock
        self._by_version: dict[tuple[str, str], RegisteredSchema] = {}  # guarded by _lock

    @staticmethod
    def _ssl_context(conf: Mapping[str, Any]) -> ssl.SSLContext | None:
        ca = conf["schema.registry.ssl.ca.location"]
        cert = conf["schema.registry.ssl.certificate.location"]
        key = conf["schema.registry.ssl.key.location"]
        if not (ca or cert):
            return None
        context = ssl.create_default_context(cafile=ca or None)
        if cert:
            context.load_cert_chain(cert, key or None)
        return context

    @property
    def urls(self) -> list[str]:
        """The registry URLs, without credentials."""
        return list(self._urls)

    def _get(self, path: str) -> Any:
        last: SchemaRegistryError | None = None
        for base in self._urls:
            request = urllib.request.Request(
                base + path, headers={"Accept": "application/vnd.schemaregistry.v1+json"}
            )
            if self._auth:
                request.add_header("Authorization", self._auth)
            try:
                with urllib.request.urlopen(
                    request, timeout=self._timeout_s, context=self._ssl
                ) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                body = exc.read()
                try:
                    answer = json.loads(body)
                    code = int(answer.get("error_code", 0)) or None
                    message = str(answer.get("message", ""))
                except (ValueError, AttributeError):
                    code, message = None, body[:200].decode(errors="replace")
                raise SchemaRegistryError(
                    f"schema registry {base} answered {exc.code} to GET {path}: {message}",
                    status=exc.code,
                    error_code=code,
                ) from None
            except (OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                last = SchemaRegistryError(
                    f"schema registry {base} unreachable within "
                    f"{self._timeout_s:g} s (GET {path}): {reason}"
                )
                logger.debug("schema registry %s failed: %s", base, reason)
        assert last is not None
        raise last

    def schema_by_id(self, schema_id: SchemaId) -> RegisteredSchema:
        """The schema registered under ``schema_id`` (cached): an id, or a GUID string as
        :func:`~kafkaconsumer.formats.wire.split_frame` gives it (``GET /schemas/guids/{guid}``;
        a registry without that path answers with a :class:`SchemaRegistryError` that says
        so and carries no ``status``, as no answer about the schema came)."""
        with self._lock:
            cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        if isinstance(schema_id, str):
            answer = self._get_guid(schema_id)
        else:
            answer = self._get(f"/schemas/ids/{int(schema_id)}")
        schema = RegisteredSchema(
            schema_str=str(answer["schema"]),
            schema_type=str(answer.get("schemaType") or "AVRO").upper(),
            schema_id=schema_id,
            references=_references(answer.get("references")),
        )
        with self._lock:
            self._by_id[schema_id] = schema
        return schema

    def _get_guid(self, guid: str) -> Any:
        try:
            return self._get(f"/schemas/guids/{urllib.parse.quote(guid, safe='')}")
        except SchemaRegistryError as exc:
            # A registry that knows GUIDs answers an unknown one with 40403 (schema not
            # found); a bare 404 is the path itself missing.
            if exc.status != 404 or exc.error_code == _SCHEMA_NOT_FOUND:
                raise
            raise SchemaRegistryError(
                f"the schema registry does not resolve schema GUIDs (a record names its schema "
                f"by GUID {guid} in its schema-id header): {exc}"
            ) from exc

    def schema_version(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        """Version ``version`` (a number or ``"latest"``) of ``subject`` (cached)."""
        key = (subject, str(version))
        with self._lock:
            cached = self._by_version.get(key)
        if cached is not None:
            return cached
        quoted = urllib.parse.quote(subject, safe="")
        answer = self._get(f"/subjects/{quoted}/versions/{version}")
        schema = RegisteredSchema(
            schema_str=str(answer["schema"]),
            schema_type=str(answer.get("schemaType") or "AVRO").upper(),
            schema_id=int(answer["id"]) if "id" in answer else None,
            subject=subject,
            version=int(answer["version"]) if "version" in answer else None,
            references=_references(answer.get("references")),
        )
        with self._lock:
            self._by_version[key] = schema
            if schema.schema_id is not None:
                self._by_id.setdefault(schema.schema_id, schema)
        return schema

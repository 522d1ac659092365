"""Configuration providers: ``${provider:path:key}`` placeholders resolved at construction
(Java ``ConfigProvider``, ``ConfigTransformer``; KIP-297 and KIP-421).

``config.providers`` names the providers; ``config.providers.<name>.class`` names one of Java's
three built-in classes (:data:`FILE_CONFIG_PROVIDER`, :data:`DIRECTORY_CONFIG_PROVIDER`,
:data:`ENV_VAR_CONFIG_PROVIDER`) and ``config.providers.<name>.param.<option>`` passes it an
option (``allowed.paths`` for the file and directory providers, ``allowlist.pattern`` for the
environment one). Every string value of the configuration is then searched for placeholders:

* ``${file:/etc/kafka/secrets.properties:password}``: the key ``password`` of a Java
  ``.properties`` file;
* ``${directory:/run/secrets:password}``: the content of the file ``password`` in a directory
  (a Kubernetes secret mounted as files);
* ``${env:KAFKA_PASSWORD}``: an environment variable.

As in Java, a placeholder whose provider is not configured, or whose key the provider does not
have (a missing file, a path outside ``allowed.paths``, a variable outside
``allowlist.pattern``), stays as written; a path outside ``allowed.paths`` is logged as a
warning. A provider class that is not one of Java's own, an ``allowed.paths`` entry that is not
an absolute path, or a path given to the environment provider raise
:class:`~kafkaconsumer.errors.ConfigError`.
"""

from __future__ import annotations

import abc
import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from kafkaconsumer.errors import ConfigError

__all__ = [
    "CONFIG_PROVIDERS_CONFIG",
    "FILE_CONFIG_PROVIDER",
    "DIRECTORY_CONFIG_PROVIDER",
    "ENV_VAR_CONFIG_PROVIDER",
    "ConfigProvider",
    "FileConfigProvider",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "parse_properties",
    "resolve_config_variables",
]

logger = logging.getLogger(__name__)

#: The key naming the providers; the per-provider keys start with it and a dot.
CONFIG_PROVIDERS_CONFIG = "config.providers"
_PACKAGE = "org.apache.kafka.common.config.provider."
FILE_CONFIG_PROVIDER = _PACKAGE + "FileConfigProvider"
DIRECTORY_CONFIG_PROVIDER = _PACKAGE + "DirectoryConfigProvider"
ENV_VAR_CONFIG_PROVIDER = _PACKAGE + "EnvVarConfigProvider"

ALLOWED_PATHS_CONFIG = "allowed.paths"
ALLOWLIST_PATTERN_CONFIG = "allowlist.pattern"

# Java ConfigTransformer's pattern: ${provider:[path:]key}, each part free of '}'.
_VARIABLE = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value`` or ``key: value`` lines, ``#`` and ``!``
    comments, a trailing backslash continues a line."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            key, value = line, ""
        else:
            key, value = line[:cut], line[cut + 1 :]
        out[key.strip()] = value.strip()
    return out


class ConfigProvider(abc.ABC):
    """A source of configuration values (Java ``ConfigProvider``): :meth:`get` returns the
    values of ``keys`` found at ``path`` (a key it lacks is left out).

    Thread-safety: configured once at construction, then read only; safe to share.
    """

    @abc.abstractmethod
    def configure(self, params: Mapping[str, str]) -> None:
        """Take the provider's options (``config.providers.<name>.param.*``)."""

    @abc.abstractmethod
    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        """The values of ``keys`` at ``path`` that exist."""


class _AllowedPaths:
    """Java ``AllowedPaths``: the absolute paths a file or directory provider may read.

    Thread-safety: immutable after construction.
    """

    def __init__(self, setting: str | None) -> None:
        self._paths: list[PurePath] | None = None
        if setting is None or not setting.strip():
            return
        paths = []
        for raw in setting.split(","):
            path = PurePath(os.path.normpath(raw.strip()))
            if not path.is_absolute():
                raise ConfigError(f"Path {raw.strip()} is not absolute")
            if not os.path.exists(path):
                raise ConfigError(f"Path {raw.strip()} does not exist")
            paths.append(path)
        self._paths = paths

    def parse_untrusted(self, path: str) -> str | None:
        """``path`` normalised when it lies under an allowed path (or none is set), else None."""
        if self._paths is None:
            return path
        normal = PurePath(os.path.normpath(path))
        if any(normal == p or p in normal.parents for p in self._paths):
            return str(normal)
        return None


class FileConfigProvider(ConfigProvider):
    """Java ``FileConfigProvider``: the keys of a ``.properties`` file; option ``allowed.paths``.

    Thread-safety: configured once at construction, then read only; safe to share.
    """

    def __init__(self) -> None:
        """A provider that may read any path until :meth:`configure` sets ``allowed.paths``."""
        self._allowed = _AllowedPaths(None)

    def configure(self, params: Mapping[str, str]) -> None:
        """Read ``allowed.paths`` (comma-separated absolute paths)."""
        self._allowed = _AllowedPaths(params.get(ALLOWED_PATHS_CONFIG))

    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        """The values of ``keys`` in the properties file ``path``."""
        if not path:
            return {}
        allowed = self._allowed.parse_untrusted(path)
        if allowed is None:
            logger.warning("the path %s is not allowed to be read (allowed.paths)", path)
            return {}
        try:
            with open(allowed, encoding="utf-8") as f:
                properties = parse_properties(f.read())
        except OSError as exc:
            logger.error("could not read properties from file %s: %s", path, exc)
            return {}
        return {k: properties[k] for k in keys if k in properties}


class DirectoryConfigProvider(ConfigProvider):
    """Java ``DirectoryConfigProvider``: each regular file of a directory is a key whose value
    is the file's content; option ``allowed.paths``.

    Thread-safety: configured once at construction, then read only; safe to share.
    """

    def __init__(self) -> None:
        """A provider that may read any path until :meth:`configure` sets ``allowed.paths``."""
        self._allowed = _AllowedPaths(None)

    def configure(self, params: Mapping[str, str]) -> None:
        """Read ``allowed.paths`` (comma-separated absolute paths)."""
        self._allowed = _AllowedPaths(params.get(ALLOWED_PATHS_CONFIG))

    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        """The contents of the files named ``keys`` in the directory ``path``."""
        if not path:
            return {}
        allowed = self._allowed.parse_untrusted(path)
        if allowed is None:
            logger.warning("the path %s is not allowed to be read (allowed.paths)", path)
            return {}
        out: dict[str, str] = {}
        for key in keys:
            file = os.path.join(allowed, key)
            # Only plain files directly in the directory, as Java reads them.
            if os.path.dirname(os.path.normpath(file)) != os.path.normpath(allowed):
                continue
            if not os.path.isfile(file):
                continue
            try:
                with open(file, encoding="utf-8") as f:
                    out[key] = f.read()
            except OSError as exc:
                logger.error("could not read file %s: %s", file, exc)
        return out


class EnvVarConfigProvider(ConfigProvider):
    """Java ``EnvVarConfigProvider``: environment variables; option ``allowlist.pattern`` (a
    regular expression a variable's whole name must match; every variable by default).

    Thread-safety: configured once at construction, then read only; safe to share.
    """

    def __init__(self) -> None:
        """A provider of every variable until :meth:`configure` sets ``allowlist.pattern``."""
        self._allow: re.Pattern[str] | None = None

    def configure(self, params: Mapping[str, str]) -> None:
        """Read ``allowlist.pattern``."""
        pattern = params.get(ALLOWLIST_PATTERN_CONFIG)
        if pattern is not None:
            try:
                self._allow = re.compile(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"Invalid value {pattern} for configuration {ALLOWLIST_PATTERN_CONFIG}: {exc}"
                ) from exc

    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        """The environment variables named ``keys`` (``path`` must be empty)."""
        if path:
            raise ConfigError(
                f"Path is not supported for EnvVarConfigProvider, invalid value '{path}'"
            )
        return {
            k: os.environ[k]
            for k in keys
            if k in os.environ and (self._allow is None or self._allow.fullmatch(k))
        }


_PROVIDER_CLASSES: dict[str, type[ConfigProvider]] = {
    FILE_CONFIG_PROVIDER: FileConfigProvider,
    DIRECTORY_CONFIG_PROVIDER: DirectoryConfigProvider,
    ENV_VAR_CONFIG_PROVIDER: EnvVarConfigProvider,
}


def _providers(names: Iterable[str], props: Mapping[str, Any]) -> dict[str, ConfigProvider]:
    providers: dict[str, ConfigProvider] = {}
    for name in names:
        prefix = f"{CONFIG_PROVIDERS_CONFIG}.{name}."
        class_name = props.get(prefix + "class")
        if class_name is None:
            # As in Java: a listed name without a class configures no provider.
            continue
        cls = _PROVIDER_CLASSES.get(str(class_name).strip())
        if cls is None:
            raise ConfigError(
                f"Invalid value {class_name} for configuration {prefix}class: only Java's "
                f"built-in providers can be used from Python ({', '.join(_PROVIDER_CLASSES)})"
            )
        params = {
            k[len(prefix + "param.") :]: str(v)
            for k, v in props.items()
            if k.startswith(prefix + "param.")
        }
        provider = cls()
        provider.configure(params)
        providers[name] = provider
    return providers


def _provider_names(value: Any) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(i).strip() for i in items if str(i).strip()]


def resolve_config_variables(
    originals: Mapping[str, Any], provider_props: Mapping[str, Any]
) -> dict[str, Any]:
    """``originals`` with the ``${provider:path:key}`` placeholders of its string values
    replaced (Java ``AbstractConfig.resolveConfigVariables``); ``provider_props`` holds the
    ``config.providers.<name>.*`` keys."""
    names = _provider_names(originals.get(CONFIG_PROVIDERS_CONFIG))
    unlisted = sorted({k.split(".")[2] for k in provider_props if k.count(".") >= 3} - set(names))
    if unlisted:
        logger.warning(
            "config.providers.%s.* is set but %s is not listed in config.providers",
            unlisted[0],
            unlisted[0],
        )
    providers = _providers(names, provider_props)
    if not providers:
        return dict(originals)
    # Gather every variable first so that each (provider, path) is read once.
    wanted: dict[tuple[str, str | None], set[str]] = {}
    for value in originals.values():
        if isinstance(value, str):
            for m in _VARIABLE.finditer(value):
                if m.group(1) in providers:
                    wanted.setdefault((m.group(1), m.group(3)), set()).add(m.group(4))
    found = {(name, path): providers[name].get(path, keys) for (name, path), keys in wanted.items()}

    def substitute(m: re.Match[str]) -> str:
        data = found.get((m.group(1), m.group(3)))
        if data is None or m.group(4) not in data:
            return m.group(0)
        return data[m.group(4)]

    return {
        k: _VARIABLE.sub(substitute, v) if isinstance(v, str) else v for k, v in originals.items()
    }

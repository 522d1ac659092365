"""``config.providers``: ``${file:...}``, ``${directory:...}`` and ``${env:...}`` placeholders
resolved at construction as Java's File, Directory and EnvVar config providers resolve them."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from kafkaconsumer.cli._common import client_config
from kafkaconsumer.config import AdminClientConfig, ConsumerConfig, ProducerConfig
from kafkaconsumer.config.config_provider import (
    DIRECTORY_CONFIG_PROVIDER,
    ENV_VAR_CONFIG_PROVIDER,
    FILE_CONFIG_PROVIDER,
)
from kafkaconsumer.errors import ConfigError

BOOT = {"bootstrap.servers": "localhost:9092"}


def _file_config(path: Path, **params: str) -> dict[str, str]:
    config = {"config.providers": "file", "config.providers.file.class": FILE_CONFIG_PROVIDER}
    for option, value in params.items():
        config[f"config.providers.file.param.{option.replace('_', '.')}"] = value
    return config


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    path = tmp_path / "secrets.properties"
    path.write_text("# secrets\nuser=alice\npassword = s3cret\n")
    return path


def test_file_placeholder_resolves_a_password(secrets: Path) -> None:
    """${file:path:key} takes the key's value from a properties file, also inside a longer value."""
    config = ConsumerConfig(
        {
            **BOOT,
            **_file_config(secrets),
            "sasl.username": f"${{file:{secrets}:user}}",
            "sasl.password": f"${{file:{secrets}:password}}",
            "client.id": f"app-${{file:{secrets}:user}}",
        }
    )
    assert config.get_password("sasl.password") == "s3cret"
    assert config["client.id"] == "app-alice"
    assert "s3cret" not in repr(config)


def test_every_client_resolves(secrets: Path) -> None:
    """The producer and the admin client resolve placeholders too."""
    for cls in (ProducerConfig, AdminClientConfig):
        config = cls({**BOOT, **_file_config(secrets), "client.id": f"${{file:{secrets}:user}}"})
        assert config["client.id"] == "alice"


def test_unknown_key_or_file_stays_as_written(secrets: Path) -> None:
    """As in Java, a placeholder with no value (missing key or file) is left unchanged."""
    missing = f"${{file:{secrets}.absent:user}}"
    config = ConsumerConfig(
        {
            **BOOT,
            **_file_config(secrets),
            "client.id": f"${{file:{secrets}:nobody}}",
            "group.id": missing,
        }
    )
    assert config["client.id"] == f"${{file:{secrets}:nobody}}"
    assert config["group.id"] == missing


def test_unconfigured_provider_stays_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """A placeholder naming a provider that config.providers does not list is not resolved."""
    monkeypatch.setenv("KC_TEST_USER", "bob")
    config = ConsumerConfig(
        {
            **BOOT,
            "config.providers": "file",
            "config.providers.file.class": FILE_CONFIG_PROVIDER,
            "client.id": "${env:KC_TEST_USER}",
        }
    )
    assert config["client.id"] == "${env:KC_TEST_USER}"
    # Without config.providers nothing is resolved at all.
    assert ConsumerConfig({**BOOT, "client.id": "${env:KC_TEST_USER}"})["client.id"] == (
        "${env:KC_TEST_USER}"
    )


def test_allowed_paths(secrets: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """allowed.paths: a file under an allowed path resolves; one outside is refused with a
    warning and its placeholder stays; an entry that is not absolute raises."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    inside = allowed / "in.properties"
    inside.write_text("user=carol\n")
    base = _file_config(secrets, allowed_paths=str(allowed))
    ok = ConsumerConfig({**BOOT, **base, "client.id": f"${{file:{inside}:user}}"})
    assert ok["client.id"] == "carol"
    # A path leaving the allowed directory through .. is outside it.
    sneaky = f"{allowed}/../{secrets.name}"
    with caplog.at_level(logging.WARNING, logger="kafkaconsumer.config.config_provider"):
        refused = ConsumerConfig({**BOOT, **base, "client.id": f"${{file:{sneaky}:user}}"})
    assert refused["client.id"] == f"${{file:{sneaky}:user}}"
    assert "not allowed" in caplog.text
    with pytest.raises(ConfigError, match="is not absolute"):
        ConsumerConfig({**BOOT, **_file_config(secrets, allowed_paths="relative/dir")})
    with pytest.raises(ConfigError, match="does not exist"):
        ConsumerConfig({**BOOT, **_file_config(secrets, allowed_paths=str(tmp_path / "none"))})


def test_directory_provider(tmp_path: Path) -> None:
    """${directory:dir:name} is the content of the file ``name`` in ``dir``; allowed.paths applies."""
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    (secret_dir / "password").write_text("dir-secret")
    other = tmp_path / "other"
    other.mkdir()
    (other / "password").write_text("other-secret")
    base = {
        **BOOT,
        "config.providers": "directory",
        "config.providers.directory.class": DIRECTORY_CONFIG_PROVIDER,
        "config.providers.directory.param.allowed.paths": str(secret_dir),
    }
    config = ConsumerConfig(
        {
            **base,
            "sasl.username": "u",
            "sasl.password": f"${{directory:{secret_dir}:password}}",
        }
    )
    assert config.get_password("sasl.password") == "dir-secret"
    outside = ConsumerConfig({**base, "client.id": f"${{directory:{other}:password}}"})
    assert outside["client.id"] == f"${{directory:{other}:password}}"
    # A key naming a file outside the directory is not read.
    escape = ConsumerConfig({**base, "client.id": f"${{directory:{secret_dir}:../other}}"})
    assert escape["client.id"].startswith("${directory:")


def test_env_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """${env:NAME} reads an environment variable; allowlist.pattern limits which; a path raises
    Java's error."""
    monkeypatch.setenv("KC_TEST_SECRET", "env-secret")
    monkeypatch.setenv("OTHER_SECRET", "hidden")
    base = {
        **BOOT,
        "config.providers": "env",
        "config.providers.env.class": ENV_VAR_CONFIG_PROVIDER,
        "config.providers.env.param.allowlist.pattern": "KC_.*",
    }
    config = ConsumerConfig(
        {
            **base,
            "sasl.username": "u",
            "sasl.password": "${env:KC_TEST_SECRET}",
            "client.id": "${env:OTHER_SECRET}",
        }
    )
    assert config.get_password("sasl.password") == "env-secret"
    assert config["client.id"] == "${env:OTHER_SECRET}"
    with pytest.raises(ConfigError, match="Path is not supported for EnvVarConfigProvider"):
        ConsumerConfig({**base, "client.id": "${env:/some/path:KC_TEST_SECRET}"})


def test_unknown_provider_class_raises() -> None:
    """A provider class that is not one of Java's built-in ones raises naming the key."""
    with pytest.raises(ConfigError, match=r"config\.providers\.vault\.class"):
        ConsumerConfig(
            {
                **BOOT,
                "config.providers": "vault",
                "config.providers.vault.class": "com.example.VaultConfigProvider",
            }
        )


def test_snake_case_provider_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """config_providers as a keyword works like the dotted key."""
    monkeypatch.setenv("KC_TEST_GROUP", "g1")
    config = ConsumerConfig(
        {**BOOT, "config.providers.env.class": ENV_VAR_CONFIG_PROVIDER},
        config_providers=["env"],
        group_id="${env:KC_TEST_GROUP}",
    )
    assert config["group.id"] == "g1"


def test_command_config_file(tmp_path: Path, secrets: Path) -> None:
    """A --command-config properties file with config.providers resolves in the client."""
    props = tmp_path / "client.properties"
    props.write_text(
        "config.providers=file\n"
        f"config.providers.file.class={FILE_CONFIG_PROVIDER}\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="${{file:{secrets}:user}}" password="${{file:{secrets}:password}}";\n'
    )
    args = argparse.Namespace(config_file=str(props), property=[], bootstrap_server="h:9092")
    config = AdminClientConfig(client_config(args))
    assert config.sasl_credentials() == ("alice", "s3cret")

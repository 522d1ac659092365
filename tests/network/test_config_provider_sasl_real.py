"""A SASL PLAIN password read from a file through ``config.providers`` (Java's
FileConfigProvider) authenticates on Apache Kafka's SASL_PLAINTEXT listener, and the JAAS line
of a ``--command-config`` file resolves the same way."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from benchmarks.harness.apache_kafka import Security
from kafkaconsumer.cli._common import client_config
from tests.helpers import unique_name
from tests.network.secured_clients import consume_committed, produce, sasl_config

pytestmark = [pytest.mark.integration]

FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"


def test_password_from_file_provider_consumes(secure_kafka: Security, tmp_path: Path) -> None:
    """sasl.password=${file:...} is resolved at construction and the broker accepts it."""
    user, password = secure_kafka.users["PLAIN"]
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"password={password}\n")
    topic = unique_name("provider")
    produce(secure_kafka, topic, 3)
    cfg = {
        **sasl_config(secure_kafka, "PLAIN"),
        "config.providers": "file",
        "config.providers.file.class": FILE_PROVIDER,
        "config.providers.file.param.allowed.paths": str(tmp_path),
        "sasl.username": user,
        "sasl.password": f"${{file:{secrets}:password}}",
    }
    assert consume_committed(cfg, topic, 3) == [b"v0", b"v1", b"v2"]


def test_command_config_jaas_from_file_provider(secure_kafka: Security, tmp_path: Path) -> None:
    """A properties file whose sasl.jaas.config takes the password from ${file:...} connects."""
    user, password = secure_kafka.users["PLAIN"]
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"password={password}\n")
    props = tmp_path / "client.properties"
    props.write_text(
        "config.providers=file\n"
        f"config.providers.file.class={FILE_PROVIDER}\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="${{file:{secrets}:password}}";\n'
    )
    args = argparse.Namespace(
        config_file=str(props), property=[], bootstrap_server=secure_kafka.sasl_bootstrap
    )
    topic = unique_name("provider-cli")
    produce(secure_kafka, topic, 2)
    cfg = {**sasl_config(secure_kafka, "PLAIN"), **client_config(args)}
    del cfg["sasl.username"], cfg["sasl.password"]
    assert consume_committed(cfg, topic, 2) == [b"v0", b"v1"]

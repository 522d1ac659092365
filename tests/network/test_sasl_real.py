"""SASL against a real broker, only when one is configured through the environment:

``KAFKA_SASL_MECHANISM`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), ``KAFKA_SASL_USERNAME``,
``KAFKA_SASL_PASSWORD``, and the SASL listener in ``KAFKA_SASL_BOOTSTRAP_SERVERS`` (or
``KAFKA_BOOTSTRAP_SERVERS``); ``KAFKA_SECURITY_PROTOCOL`` (default SASL_PLAINTEXT) and
``KAFKA_SSL_CA`` for SASL_SSL. The embedded test broker has no SASL users, so these are skipped
by default; the exchanges are covered against the scripted fake broker.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from kafkaconsumer.errors import SaslAuthenticationError
from tests.network.conftest import Factory

_MECH = os.environ.get("KAFKA_SASL_MECHANISM")
_BOOTSTRAP = os.environ.get("KAFKA_SASL_BOOTSTRAP_SERVERS") or os.environ.get(
    "KAFKA_BOOTSTRAP_SERVERS")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(60),
    pytest.mark.skipif(not (_MECH and _BOOTSTRAP and os.environ.get("KAFKA_SASL_USERNAME")),
                       reason="no SASL broker configured (KAFKA_SASL_MECHANISM, "
                              "KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD)"),
]


def sasl_config(password: str) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "security.protocol": os.environ.get("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT"),
        "sasl.mechanism": _MECH, "sasl.username": os.environ.get("KAFKA_SASL_USERNAME"),
        "sasl.password": password}
    if os.environ.get("KAFKA_SSL_CA"):
        cfg["ssl.truststore.location"] = os.environ["KAFKA_SSL_CA"]
    return cfg


def test_real_broker_sasl_success(make_client: Factory) -> None:
    assert _BOOTSTRAP is not None
    cnc = make_client(_BOOTSTRAP, sasl_config(os.environ.get("KAFKA_SASL_PASSWORD", "")))
    cnc.await_metadata_update(15_000)
    assert cnc.metadata is not None and cnc.metadata.cluster.brokers()


def test_real_broker_sasl_wrong_password(make_client: Factory) -> None:
    assert _BOOTSTRAP is not None
    cnc = make_client(_BOOTSTRAP, sasl_config("definitely-not-the-password"))
    with pytest.raises(SaslAuthenticationError) as info:
        cnc.await_metadata_update(15_000)
    assert "definitely-not-the-password" not in str(info.value)

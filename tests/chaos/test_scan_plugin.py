"""The secret-scanning plugin (tests/support/secret_scan.py) finds what it is there to find.

This module's name keeps it out of the scanned security suite, so it can leak on purpose.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from kafkaconsumer.config import ConsumerConfig, Password
from kafkaconsumer.errors import KafkaConnectionError
from kafkaconsumer.network.sasl import Secret
from tests.support import secret_scan

pytestmark = pytest.mark.timeout(30)


def _run_as_security_test(body: object) -> None:
    item = SimpleNamespace(nodeid="tests/network/test_sasl_fake.py::test_x")
    gen = secret_scan.pytest_runtest_call(item)  # type: ignore[arg-type]
    next(gen)
    try:
        body()  # type: ignore[operator]
    finally:
        try:
            gen.send(None)
        except StopIteration:
            pass


def test_secrets_are_recorded_from_every_wrapper() -> None:
    Password("recorded-password-1")
    Secret("recorded-secret-2")
    ConsumerConfig({"sasl.jaas.config": 'x required password="recorded-jaas-3";'})
    assert {"recorded-password-1", "recorded-secret-2"} <= secret_scan.recorded_secrets()
    assert any("recorded-jaas-3" in s for s in secret_scan.recorded_secrets())
    Password("short-7")
    assert "short-7" not in secret_scan.recorded_secrets()


def test_a_secret_in_a_log_record_fails_the_test() -> None:
    Password("leaked-in-a-log-4")
    with pytest.raises(AssertionError, match="a DEBUG record of kafkaconsumer.network"):
        _run_as_security_test(
            lambda: logging.getLogger("kafkaconsumer.network").debug(
                "token %s", "leaked-in-a-log-4"
            )
        )


def test_a_secret_in_an_error_message_fails_the_test() -> None:
    Secret("leaked-in-an-error-5")
    with pytest.raises(AssertionError, match="the message of a KafkaConnectionError"):
        _run_as_security_test(lambda: KafkaConnectionError("auth with leaked-in-an-error-5"))


def test_a_clean_security_test_passes_and_restores_everything() -> None:
    lib = logging.getLogger("kafkaconsumer")
    level, handlers = lib.level, list(lib.handlers)
    _run_as_security_test(lambda: logging.getLogger("kafkaconsumer.x").debug("plain words"))
    assert lib.level == level and lib.handlers == handlers
    assert str(KafkaConnectionError("recorded-password-1")) == "recorded-password-1"

"""The embedded broker starts, answers, and stops the process it started."""

from __future__ import annotations

import os

import pytest

from kafkaconsumer._child_process import api_versions_probe
from kafkaconsumer.embedded import EmbeddedBroker, EmbeddedBrokerError, free_port


@pytest.mark.integration
@pytest.mark.own_embedded_broker
@pytest.mark.timeout(60)
def test_start_answer_stop() -> None:
    with EmbeddedBroker() as broker:
        host, port = broker.bootstrap_servers.split(":")
        assert api_versions_probe(host, int(port), timeout=2.0)
        pid = broker.pid
        assert pid is not None
    # the process is gone: signal 0 to its pid fails
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not api_versions_probe(host, int(port), timeout=0.5)


@pytest.mark.integration
@pytest.mark.own_embedded_broker
@pytest.mark.timeout(60)
def test_advertised_listener_is_separate() -> None:
    advertised = free_port()
    with EmbeddedBroker(advertised_port=advertised) as broker:
        assert broker.advertised_port == advertised
        assert broker.listen_port != advertised
        host, port = broker.bootstrap_servers.split(":")
        assert api_versions_probe(host, int(port), timeout=2.0)


def test_missing_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKACONSUMER_BROKER_BIN", "/nonexistent/tansu")
    with pytest.raises(EmbeddedBrokerError, match="KAFKACONSUMER_BROKER_BIN"):
        EmbeddedBroker().start()


def test_probe_fails_fast_when_nothing_listens() -> None:
    assert not api_versions_probe("127.0.0.1", free_port(), timeout=0.5)

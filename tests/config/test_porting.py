"""Settings of kafka-python and confluent-kafka (librdkafka) that are not our keys are refused
with what to use instead (or why nothing is needed), not with a did-you-mean to a key spelled
alike; kafka-python's positional topics and assignor classes say what to write instead."""

from __future__ import annotations

import re

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.config import AbstractConfig, AdminClientConfig, ConsumerConfig, ProducerConfig
from kafkaconsumer.config.porting import _CONSUMER_ONLY, KAFKA_PYTHON, LIBRDKAFKA, porting_hint
from kafkaconsumer.errors import ConfigError

#: Every KafkaConsumer keyword of kafka-python 1.4 to 3.0 (its DEFAULT_CONFIG over the releases).
KAFKA_PYTHON_KEYS = """
allow_auto_create_topics api_version api_version_auto_timeout_ms auto_commit_interval_ms
auto_offset_reset bootstrap_servers bootstrap_timeout_ms check_crcs client_dns_lookup client_id
client_rack connections_max_idle_ms consumer_timeout_ms default_api_timeout_ms
default_offset_commit_callback enable_auto_commit enable_incremental_fetch_sessions
exclude_internal_topics fetch_max_bytes fetch_max_wait_ms fetch_min_bytes group_id
group_instance_id heartbeat_interval_ms isolation_level kafka_client key_deserializer
legacy_iterator max_in_flight_requests_per_connection max_partition_fetch_bytes
max_poll_interval_ms max_poll_records metadata_max_age_ms metric_group_prefix metric_reporters
metrics_enabled metrics_num_samples metrics_sample_window_ms net partition_assignment_strategy
proxy_url receive_buffer_bytes receive_message_max_bytes reconnect_backoff_max_ms
reconnect_backoff_ms request_timeout_ms retry_backoff_ms sasl_kerberos_domain_name
sasl_kerberos_name sasl_kerberos_service_name sasl_mechanism sasl_oauth_token_provider
sasl_plain_password sasl_plain_username security_protocol selector send_buffer_bytes
session_timeout_ms sock_chunk_buffer_count sock_chunk_bytes
socket_connection_setup_timeout_max_ms socket_connection_setup_timeout_ms socket_options
socks5_proxy ssl_cafile ssl_certfile ssl_check_hostname ssl_ciphers ssl_context ssl_crlfile
ssl_keyfile ssl_password value_deserializer
""".split()

#: Every global and consumer property of librdkafka 2.x (CONFIGURATION.md), with
#: confluent-kafka's Python-only settings (on_commit, logger, oauth_cb, ...).
LIBRDKAFKA_KEYS = """
builtin.features client.id metadata.broker.list bootstrap.servers message.max.bytes
message.copy.max.bytes receive.message.max.bytes max.in.flight.requests.per.connection
max.in.flight metadata.recovery.strategy metadata.recovery.rebootstrap.trigger.ms
topic.metadata.refresh.interval.ms metadata.max.age.ms topic.metadata.refresh.fast.interval.ms
topic.metadata.refresh.fast.cnt topic.metadata.refresh.sparse topic.metadata.propagation.max.ms
topic.blacklist debug socket.timeout.ms socket.blocking.max.ms socket.send.buffer.bytes
socket.receive.buffer.bytes socket.keepalive.enable socket.nagle.disable socket.max.fails
broker.address.ttl broker.address.family socket.connection.setup.timeout.ms
connections.max.idle.ms reconnect.backoff.jitter.ms reconnect.backoff.ms
reconnect.backoff.max.ms statistics.interval.ms enabled_events error_cb throttle_cb stats_cb
log_cb log_level log.queue log.thread.name enable.random.seed log.connection.close
background_event_cb socket_cb connect_cb closesocket_cb open_cb resolve_cb opaque
default_topic_conf internal.termination.signal api.version.request
api.version.request.timeout.ms api.version.fallback.ms broker.version.fallback
allow.auto.create.topics security.protocol ssl.cipher.suites ssl.curves.list ssl.sigalgs.list
ssl.key.location ssl.key.password ssl.key.pem ssl_key ssl.certificate.location
ssl.certificate.pem ssl_certificate ssl.ca.location https.ca.location https.ca.pem ssl.ca.pem
ssl_ca ssl.ca.certificate.stores ssl.crl.location ssl.keystore.location ssl.keystore.password
ssl.providers ssl.engine.location ssl.engine.id ssl_engine_callback_data
enable.ssl.certificate.verification ssl.endpoint.identification.algorithm
ssl.certificate.verify_cb sasl.mechanisms sasl.mechanism sasl.kerberos.service.name
sasl.kerberos.principal sasl.kerberos.kinit.cmd sasl.kerberos.keytab
sasl.kerberos.min.time.before.relogin sasl.username sasl.password sasl.oauthbearer.config
enable.sasl.oauthbearer.unsecure.jwt oauthbearer_token_refresh_cb sasl.oauthbearer.method
sasl.oauthbearer.client.id sasl.oauthbearer.client.credentials.client.id
sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.client.secret
sasl.oauthbearer.scope sasl.oauthbearer.extensions sasl.oauthbearer.token.endpoint.url
sasl.oauthbearer.sub.claim.name sasl.oauthbearer.grant.type
sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.private.key.file
sasl.oauthbearer.assertion.private.key.passphrase sasl.oauthbearer.assertion.private.key.pem
sasl.oauthbearer.assertion.file sasl.oauthbearer.assertion.claim.aud
sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
sasl.oauthbearer.assertion.claim.jti.include sasl.oauthbearer.assertion.claim.nbf.seconds
sasl.oauthbearer.assertion.claim.sub sasl.oauthbearer.assertion.jwt.template.file
sasl.oauthbearer.metadata.authentication.type plugin.library.paths interceptors group.id
group.instance.id partition.assignment.strategy session.timeout.ms heartbeat.interval.ms
group.protocol.type group.protocol group.remote.assignor coordinator.query.interval.ms
max.poll.interval.ms enable.auto.commit auto.commit.interval.ms enable.auto.offset.store
queued.min.messages queued.max.messages.kbytes fetch.wait.max.ms fetch.queue.backoff.ms
fetch.message.max.bytes max.partition.fetch.bytes fetch.max.bytes fetch.min.bytes
fetch.error.backoff.ms offset.store.method isolation.level consume_cb rebalance_cb
offset_commit_cb enable.partition.eof check.crcs client.rack max.poll.records
share.acknowledgement.mode retry.backoff.ms retry.backoff.max.ms client.dns.lookup
enable.metrics.push auto.commit.enable auto.offset.reset offset.store.path
offset.store.sync.interval.ms consume.callback.max.messages on_commit logger oauth_cb
""".split()

#: librdkafka properties that carry a Java consumer key's name: Java's meaning decides them (our
#: key, or refused with Java's reason), never this table.
JAVA_NAMED = {
    k
    for k in LIBRDKAFKA_KEYS
    if k.startswith("sasl.oauthbearer.assertion.")
    or k.startswith("sasl.oauthbearer.client.credentials.")
    or k
    in {
        "sasl.oauthbearer.scope",
        "metadata.recovery.rebootstrap.trigger.ms",
        "share.acknowledgement.mode",
        "sasl.oauthbearer.assertion.private.key.pem",
    }
}


def _is_key(config: type[AbstractConfig], key: str) -> bool:
    try:
        config._canonical(key)
    except ConfigError:
        return False
    return True


def _error(key: str, config: type[AbstractConfig] = ConsumerConfig) -> str:
    with pytest.raises(ConfigError) as info:
        config._canonical(key)
    return str(info.value)


@pytest.mark.parametrize("key", KAFKA_PYTHON_KEYS)
def test_every_kafka_python_key_is_ours_or_says_what_to_use(key: str) -> None:
    if _is_key(ConsumerConfig, key):
        assert key not in KAFKA_PYTHON
        return
    message = _error(key)
    assert "a kafka-python setting: " in message
    assert "did you mean" not in message


def test_the_installed_kafka_pythons_keys_are_covered() -> None:
    kafka = pytest.importorskip("kafka")
    for key in kafka.KafkaConsumer.DEFAULT_CONFIG:
        assert _is_key(ConsumerConfig, key) or key in KAFKA_PYTHON, key


@pytest.mark.parametrize("key", LIBRDKAFKA_KEYS)
def test_every_librdkafka_key_is_ours_or_says_what_to_use(key: str) -> None:
    if _is_key(ConsumerConfig, key) or key in JAVA_NAMED:
        assert key not in LIBRDKAFKA
        return
    message = _error(key)
    assert "a librdkafka setting: " in message
    assert "did you mean" not in message


def test_every_table_entry_is_another_clients_name_we_lack() -> None:
    assert set(KAFKA_PYTHON) <= set(KAFKA_PYTHON_KEYS)
    assert set(LIBRDKAFKA) <= set(LIBRDKAFKA_KEYS)
    for key in list(KAFKA_PYTHON) + list(LIBRDKAFKA):
        assert not _is_key(ConsumerConfig, key), key


def _named_keys(advice: str) -> list[str]:
    return [k for k in re.findall(r"'([a-z0-9]+(?:\.[a-z0-9]+)+)'", advice)]


def test_the_keys_the_advice_names_exist() -> None:
    for table in (KAFKA_PYTHON, LIBRDKAFKA):
        for key, advice in table.items():
            for named in _named_keys(advice):
                assert _is_key(ConsumerConfig, named), (key, named)
                if key not in _CONSUMER_ONLY:
                    for config in (ProducerConfig, AdminClientConfig):
                        assert _is_key(config, named), (config.__name__, key, named)


def test_consumer_advice_is_not_given_to_the_producer() -> None:
    assert porting_hint("consumer_timeout_ms", "ProducerConfig") is None
    assert porting_hint("ssl_cafile", "ProducerConfig") is not None
    assert "ssl.truststore.location" in _error("ssl_cafile", ProducerConfig)


@pytest.mark.parametrize(
    "key,expected",
    [
        ("consumer_timeout_ms", "poll(timeout_ms=...)"),
        ("api_version", "ApiVersions"),
        ("ssl_cafile", "'ssl.truststore.location'"),
        ("ssl_certfile", "'ssl.certificate.location'"),
        ("ssl_keyfile", "'ssl.key.location'"),
        ("sasl_plain_username", "'sasl.username'"),
        ("sasl_plain_password", "'sasl.password'"),
        ("enable_incremental_fetch_sessions", "'enable.fetch.sessions'"),
        ("fetch.wait.max.ms", "'fetch.max.wait.ms'"),
        ("fetch.message.max.bytes", "'max.partition.fetch.bytes'"),
        ("socket.timeout.ms", "'request.timeout.ms'"),
        ("metadata.broker.list", "'bootstrap.servers'"),
        ("debug", "logging.getLogger('kafkaconsumer')"),
        ("enable.partition.eof", "current_lag"),
    ],
)
def test_the_advice_names_our_equivalent(key: str, expected: str) -> None:
    message = _error(key)
    assert message.startswith(f"unknown ConsumerConfig key {key!r}, a ")
    assert expected in message


def test_snake_case_keyword_arguments_get_the_same_advice() -> None:
    with pytest.raises(ConfigError, match="'ssl.truststore.location'"):
        KafkaConsumer(bootstrap_servers="localhost:9092", ssl_cafile="/etc/ca.pem")
    with pytest.raises(ConfigError, match="for ever"):
        KafkaConsumer(bootstrap_servers="localhost:9092", consumer_timeout_ms=1000)


@pytest.mark.parametrize("topics", [("orders",), ("orders", "payments")])
def test_positional_topics_say_to_call_subscribe(topics: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as info:
        KafkaConsumer(*topics, bootstrap_servers="localhost:9092")  # type: ignore[arg-type]
    message = str(info.value)
    assert f"consumer.subscribe([{', '.join(repr(t) for t in topics)}])" in message


def test_kafka_python_assignor_classes_name_our_strategies() -> None:
    pytest.importorskip("kafka")
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    for cls, ours in (
        (RangePartitionAssignor, "'range'"),
        (RoundRobinPartitionAssignor, "'roundrobin'"),
        (StickyPartitionAssignor, "'sticky'"),
    ):
        for spec in ([cls], f"{cls.__module__}.{cls.__name__}"):
            with pytest.raises(ConfigError) as info:
                KafkaConsumer(
                    bootstrap_servers="localhost:9092",
                    group_id="g",
                    partition_assignment_strategy=spec,
                )
            assert f"partition_assignment_strategy={ours}" in str(info.value)


@pytest.mark.parametrize(
    "doc,table",
    [("porting-kafka-python.md", KAFKA_PYTHON), ("porting-confluent-kafka.md", LIBRDKAFKA)],
)
def test_the_porting_guides_show_the_same_advice(doc: str, table: dict[str, str]) -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / doc).read_text(encoding="utf-8")
    for key, advice in table.items():
        assert f"| `{key}` | {advice} |" in text, key

"""ConsumerConfig / ProducerConfig / AdminClientConfig: defaults, parsing, validation."""

from __future__ import annotations

import pickle
import ssl

import pytest

from kafkaconsumer.config import (
    AdminClientConfig,
    ConfigType,
    ConsumerConfig,
    Password,
    ProducerConfig,
    parse_bootstrap_servers,
    parse_jaas_config,
)
from kafkaconsumer.errors import ConfigError

# Declared defaults, written from the Java sources (ConsumerConfig.java, CommonClientConfigs.java,
# SslConfigs.java, SaslConfigs.java of Apache Kafka 3.7/3.8), independently of
# kafkaconsumer/config/.
# Lists are written as Java's comma-separated strings; None is Java's null.
JAVA_CONSUMER_DEFAULTS: dict[str, object] = {
    "bootstrap.servers": "",
    "client.dns.lookup": "use_all_dns_ips",
    "bootstrap.resolve.timeout.ms": 2 * 60 * 1000,
    "group.id": None,
    "group.instance.id": None,
    "session.timeout.ms": 45000,
    "heartbeat.interval.ms": 3000,
    "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor,"
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    "metadata.max.age.ms": 5 * 60 * 1000,
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 5000,
    "client.id": "",
    "client.rack": "",
    "max.partition.fetch.bytes": 1 * 1024 * 1024,
    "send.buffer.bytes": 128 * 1024,
    "receive.buffer.bytes": 64 * 1024,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 50 * 1024 * 1024,
    "fetch.max.wait.ms": 500,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1000,
    "enable.metrics.push": True,
    "auto.include.jmx.reporter": True,
    "auto.offset.reset": "latest",
    "check.crcs": True,
    "metrics.sample.window.ms": 30000,
    "metrics.num.samples": 2,
    "metrics.recording.level": "INFO",
    "metric.reporters": "org.apache.kafka.common.metrics.JmxReporter",
    "request.timeout.ms": 30000,
    "default.api.timeout.ms": 60 * 1000,
    "socket.connection.setup.timeout.ms": 10 * 1000,
    "socket.connection.setup.timeout.max.ms": 30 * 1000,
    "connections.max.idle.ms": 9 * 60 * 1000,
    "interceptor.classes": "",
    "max.poll.records": 500,
    "max.poll.interval.ms": 300000,
    "exclude.internal.topics": True,
    "internal.leave.group.on.close": True,
    "internal.throw.on.fetch.stable.offset.unsupported": False,
    "isolation.level": "read_uncommitted",
    "allow.auto.create.topics": True,
    "group.protocol": "classic",
    "group.remote.assignor": None,
    "security.providers": None,
    "security.protocol": "PLAINTEXT",
    "metadata.recovery.strategy": "rebootstrap",
    "metadata.recovery.rebootstrap.trigger.ms": 300000,
    "metadata.cluster.check.enable": True,
    "config.providers": "",
    # SslConfigs.addClientSslSupport
    "ssl.protocol": "TLSv1.3",
    "ssl.provider": None,
    "ssl.cipher.suites": None,
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.keystore.type": "JKS",
    "ssl.keystore.location": None,
    "ssl.keystore.password": None,
    "ssl.key.password": None,
    "ssl.keystore.key": None,
    "ssl.keystore.certificate.chain": None,
    "ssl.truststore.certificates": None,
    "ssl.truststore.type": "JKS",
    "ssl.truststore.location": None,
    "ssl.truststore.password": None,
    "ssl.keymanager.algorithm": "SunX509",
    "ssl.trustmanager.algorithm": "PKIX",
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.secure.random.implementation": None,
    "ssl.engine.factory.class": None,
    # SaslConfigs.addClientSaslSupport
    "sasl.kerberos.service.name": None,
    "sasl.kerberos.kinit.cmd": "/usr/bin/kinit",
    "sasl.kerberos.ticket.renew.window.factor": 0.80,
    "sasl.kerberos.ticket.renew.jitter": 0.05,
    "sasl.kerberos.min.time.before.relogin": 1 * 60 * 1000,
    "sasl.login.refresh.window.factor": 0.80,
    "sasl.login.refresh.window.jitter": 0.05,
    "sasl.login.refresh.min.period.seconds": 60,
    "sasl.login.refresh.buffer.seconds": 300,
    "sasl.mechanism": "GSSAPI",
    "sasl.jaas.config": None,
    "sasl.client.callback.handler.class": None,
    "sasl.login.callback.handler.class": None,
    "sasl.login.class": None,
    "sasl.login.connect.timeout.ms": None,
    "sasl.login.read.timeout.ms": None,
    "sasl.login.retry.backoff.max.ms": 10000,
    "sasl.login.retry.backoff.ms": 100,
    "sasl.oauthbearer.scope.claim.name": "scope",
    "sasl.oauthbearer.sub.claim.name": "sub",
    "sasl.oauthbearer.token.endpoint.url": None,
    "sasl.oauthbearer.jwks.endpoint.url": None,
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": 60 * 60 * 1000,
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": 10000,
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": 100,
    "sasl.oauthbearer.clock.skew.seconds": 30,
    "sasl.oauthbearer.expected.audience": None,
    "sasl.oauthbearer.expected.issuer": None,
    "sasl.oauthbearer.allow.unverified.audience": False,
    "sasl.oauthbearer.allow.unverified.issuer": False,
    "sasl.oauthbearer.client.credentials.client.id": None,
    "sasl.oauthbearer.client.credentials.client.secret": None,
    "sasl.oauthbearer.scope": None,
    "sasl.oauthbearer.header.urlencode": False,
    "sasl.oauthbearer.jwt.retriever.class": (
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"
    ),
    "sasl.oauthbearer.jwt.validator.class": (
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"
    ),
    "sasl.oauthbearer.assertion.algorithm": "RS256",
    "sasl.oauthbearer.assertion.claim.aud": None,
    "sasl.oauthbearer.assertion.claim.exp.seconds": 300,
    "sasl.oauthbearer.assertion.claim.iss": None,
    "sasl.oauthbearer.assertion.claim.jti.include": False,
    "sasl.oauthbearer.assertion.claim.nbf.seconds": 60,
    "sasl.oauthbearer.assertion.claim.sub": None,
    "sasl.oauthbearer.assertion.file": None,
    "sasl.oauthbearer.assertion.private.key.file": None,
    "sasl.oauthbearer.assertion.private.key.passphrase": None,
    "sasl.oauthbearer.assertion.template.file": None,
}

# Java has no default for the deserializers (they are required); ours is raw bytes. The other
# Python-only keys default to unset.
PYTHON_ONLY_DEFAULTS: dict[str, object] = {
    "key.deserializer": None,
    "value.deserializer": None,
    "key.deserializer.encoding": None,
    "value.deserializer.encoding": None,
    "deserializer.encoding": None,
    "sasl.username": None,
    "sasl.password": None,
    "sasl.oauthbearer.token.provider": None,
    "sasl.oauthbearer.token.callback": None,
    "sasl.oauthbearer.extensions": None,
    "sasl.scram.tokenauth": False,
    "ssl.ca.location": None,
    "ssl.certificate.location": None,
    "ssl.key.location": None,
    "ssl.context": None,
    "enable.fetch.sessions": True,
    "internal.cooperative.rejoin.delay.ms": 0,
    "arrow.decode.threads": 1,
    "arrow.poll.max.bytes": 16 * 1024 * 1024,
    "arrow.malloc.tuning": True,
}


# Defaults that depart from Java on purpose, each documented in docs/porting-java.md:
# key -> our default.
DEPARTURES: dict[str, object] = {
    # Java's fixed 64 KiB turns off the kernel's receive-buffer autotuning.
    "receive.buffer.bytes": -1,
}


def _expected(name: str) -> object:
    return DEPARTURES.get(name, JAVA_CONSUMER_DEFAULTS[name])


def _as_java(value: object) -> object:
    """Render a parsed value the way the Java table above writes it."""
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return value


def test_every_consumer_key_is_in_the_java_table_or_python_only() -> None:
    names = ConsumerConfig.config_names()
    assert names == set(JAVA_CONSUMER_DEFAULTS) | set(PYTHON_ONLY_DEFAULTS)
    for name in PYTHON_ONLY_DEFAULTS:
        key = ConsumerConfig.definition(name)
        assert key.python_only or name.endswith("deserializer"), name


@pytest.mark.parametrize("name", sorted(JAVA_CONSUMER_DEFAULTS))
def test_declared_default_matches_java(name: str) -> None:
    key = ConsumerConfig.definition(name)
    assert _as_java(key.default) == _expected(name)


@pytest.mark.parametrize("name", sorted(JAVA_CONSUMER_DEFAULTS))
def test_effective_default_matches_java(name: str) -> None:
    config = ConsumerConfig(group_id="g")
    if name == "client.id":
        # Java generates consumer-<group>-<sequence> when client.id is empty.
        assert config[name].startswith("consumer-g-")
        return
    expected = _expected(name)
    if name == "group.id":
        expected = "g"
    assert _as_java(config[name]) == expected


def test_python_only_defaults() -> None:
    config = ConsumerConfig()
    for name, expected in PYTHON_ONLY_DEFAULTS.items():
        assert config[name] == expected


def test_producer_and_admin_defaults() -> None:
    producer = ProducerConfig()
    assert producer["acks"] == "all"
    assert producer["compression.type"] == "none"
    assert producer["batch.size"] == 16384
    assert producer["linger.ms"] == 0
    assert producer["buffer.memory"] == 32 * 1024 * 1024
    assert producer["max.request.size"] == 1024 * 1024
    assert producer["delivery.timeout.ms"] == 120000
    assert producer["max.block.ms"] == 60000
    assert producer["receive.buffer.bytes"] == 32 * 1024
    assert producer["enable.idempotence"] is True
    assert producer["client.id"].startswith("producer-")
    admin = AdminClientConfig()
    assert admin["connections.max.idle.ms"] == 5 * 60 * 1000
    assert admin["default.api.timeout.ms"] == 60000
    assert admin["client.id"].startswith("adminclient-")


# ----------------------------------------------------------------------------- keys


def test_unknown_key_suggests_closest() -> None:
    with pytest.raises(ConfigError, match=r"'fetch\.mni\.bytes'.*did you mean 'fetch\.min\.bytes'"):
        ConsumerConfig({"fetch.mni.bytes": 1})
    with pytest.raises(ConfigError, match=r"did you mean 'max\.poll\.records'"):
        ConsumerConfig(max_poll_record=5)
    with pytest.raises(ConfigError, match="unknown ConsumerConfig key 'zzzz'"):
        ConsumerConfig({"zzzz": 1})


def test_producer_key_on_consumer_is_unknown() -> None:
    with pytest.raises(ConfigError, match="acks"):
        ConsumerConfig(acks="all")


def test_snake_case_equivalence() -> None:
    a = ConsumerConfig({"fetch.min.bytes": 7, "group.id": "g", "auto.offset.reset": "earliest"})
    b = ConsumerConfig(
        fetch_min_bytes=7, group_id="g", auto_offset_reset="earliest", client_id=a["client.id"]
    )
    assert a == b
    assert b["fetch_min_bytes"] == 7  # lookups accept the keyword spelling too
    c = ConsumerConfig({"fetch_min_bytes": 7}, group_id="g")
    assert c["fetch.min.bytes"] == 7


def test_same_key_twice_conflict() -> None:
    with pytest.raises(ConfigError, match="fetch.min.bytes is given twice"):
        ConsumerConfig({"fetch.min.bytes": 1}, fetch_min_bytes=2)
    # The same value twice is harmless.
    assert ConsumerConfig({"fetch.min.bytes": 3}, fetch_min_bytes=3)["fetch.min.bytes"] == 3


def test_non_string_key_and_non_mapping() -> None:
    with pytest.raises(ConfigError, match="keys must be strings"):
        ConsumerConfig({1: 2})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="mapping"):
        ConsumerConfig([("group.id", "g")])  # type: ignore[arg-type]


def test_read_only_mapping() -> None:
    config = ConsumerConfig()
    with pytest.raises(TypeError):
        config["fetch.min.bytes"] = 2  # type: ignore[index]
    assert len(config) == len(ConsumerConfig.config_names())
    assert set(config) == ConsumerConfig.config_names()
    assert dict(config)["max.poll.records"] == 500
    with pytest.raises(KeyError):
        config["nope"]


# ----------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("given", "expected"), [(True, True), ("true", True), (" FALSE ", False), (False, False)]
)
def test_boolean_parsing(given: object, expected: bool) -> None:
    assert ConsumerConfig(check_crcs=given)["check.crcs"] is expected


@pytest.mark.parametrize("bad", ["yes", 1, 0, "1", None])
def test_boolean_rejects(bad: object) -> None:
    with pytest.raises(ConfigError, match="check.crcs"):
        ConsumerConfig(check_crcs=bad)


@pytest.mark.parametrize(("given", "expected"), [(10, 10), ("10", 10), (" 42 ", 42), (5.0, 5)])
def test_int_parsing(given: object, expected: int) -> None:
    assert ConsumerConfig(max_poll_records=given)["max.poll.records"] == expected


@pytest.mark.parametrize("bad", ["ten", 1.5, True, [1], None])
def test_int_rejects_type(bad: object) -> None:
    with pytest.raises(ConfigError, match="max.poll.records"):
        ConsumerConfig(max_poll_records=bad)


def test_int_range_and_width() -> None:
    with pytest.raises(ConfigError, match=r"max\.poll\.records: invalid value 0; must be >= 1"):
        ConsumerConfig(max_poll_records=0)
    with pytest.raises(ConfigError, match="does not fit a Java int"):
        ConsumerConfig(fetch_max_bytes=2**31)
    # LONG keys take 64-bit values.
    assert ConsumerConfig(metadata_max_age_ms=2**40)["metadata.max.age.ms"] == 2**40
    with pytest.raises(ConfigError, match="does not fit a Java long"):
        ConsumerConfig(metadata_max_age_ms=2**63)
    with pytest.raises(ConfigError, match="does not fit a Java short"):
        ConsumerConfig(sasl_login_refresh_buffer_seconds=2**15)
    with pytest.raises(ConfigError, match="between 0 and 3600"):
        ConsumerConfig(sasl_login_refresh_buffer_seconds=3601)
    assert ConsumerConfig(send_buffer_bytes=-1)["send.buffer.bytes"] == -1
    with pytest.raises(ConfigError, match="send.buffer.bytes"):
        ConsumerConfig(send_buffer_bytes=-2)


def test_double_parsing() -> None:
    assert ConsumerConfig(sasl_login_refresh_window_factor="0.9")[
        "sasl.login.refresh.window.factor"
    ] == pytest.approx(0.9)
    assert (
        ConsumerConfig(sasl_login_refresh_window_factor=1)["sasl.login.refresh.window.factor"]
        == 1.0
    )
    with pytest.raises(ConfigError, match="between 0.5 and 1.0"):
        ConsumerConfig(sasl_login_refresh_window_factor=0.1)
    with pytest.raises(ConfigError, match="expected a number"):
        ConsumerConfig(sasl_login_refresh_window_factor="x")


def test_string_enums_normalise_and_reject() -> None:
    config = ConsumerConfig(
        auto_offset_reset="EARLIEST",
        isolation_level="Read_Committed",
        security_protocol="plaintext",
        group_protocol="CLASSIC",
    )
    assert config["auto.offset.reset"] == "earliest"
    assert config["isolation.level"] == "read_committed"
    assert config["security.protocol"] == "PLAINTEXT"
    assert config["group.protocol"] == "classic"
    with pytest.raises(
        ConfigError, match=r"Invalid value `smallest` for configuration auto\.offset\.reset\."
    ):
        ConsumerConfig(auto_offset_reset="smallest")
    with pytest.raises(ConfigError, match="isolation.level"):
        ConsumerConfig(isolation_level="committed")
    with pytest.raises(ConfigError, match="expected a string"):
        ConsumerConfig(group_id=5)


def test_list_parsing() -> None:
    config = ConsumerConfig(bootstrap_servers=" a:1 , b:2 ")
    assert config["bootstrap.servers"] == ("a:1", "b:2")
    assert ConsumerConfig(bootstrap_servers=["a:1", "b:2"])["bootstrap.servers"] == ("a:1", "b:2")
    assert ConsumerConfig(bootstrap_servers="")["bootstrap.servers"] == ()
    with pytest.raises(ConfigError, match="empty item"):
        ConsumerConfig(bootstrap_servers="a:1,,b:2")
    with pytest.raises(ConfigError, match="expected a list"):
        ConsumerConfig(bootstrap_servers=9092)
    with pytest.raises(ConfigError, match="must not be null"):
        ConsumerConfig(bootstrap_servers=None)


def test_bootstrap_servers_format() -> None:
    assert parse_bootstrap_servers("h:1,[::1]:9092") == [("h", 1), ("::1", 9092)]
    with pytest.raises(ConfigError, match="'localhost'"):
        ConsumerConfig(bootstrap_servers="localhost")
    with pytest.raises(ConfigError, match="invalid port"):
        ConsumerConfig(bootstrap_servers="h:70000")
    assert ConsumerConfig(bootstrap_servers="h:9")["bootstrap.servers"] == ("h:9",)
    assert ConsumerConfig(bootstrap_servers="h:9").bootstrap_addresses() == [("h", 9)]


def test_class_keys() -> None:
    assert ConsumerConfig(value_deserializer="str")["value.deserializer"] == "str"
    fn = lambda data: data  # noqa: E731
    assert ConsumerConfig(key_deserializer=fn)["key.deserializer"] is fn
    with pytest.raises(ConfigError, match="unknown deserializer 'strng'"):
        ConsumerConfig(value_deserializer="strng")
    with pytest.raises(ConfigError, match="cannot import module"):
        ConsumerConfig(value_deserializer="no_such_module_xyz:Thing")
    with pytest.raises(ConfigError, match="unknown Java deserializer"):
        ConsumerConfig(value_deserializer="org.apache.kafka.common.serialization.FooDeserializer")
    with pytest.raises(ConfigError, match="cannot use 5"):
        ConsumerConfig(value_deserializer=5)


def test_partition_assignment_strategy_forms() -> None:
    config = ConsumerConfig(partition_assignment_strategy="range, cooperative-sticky")
    assert config["partition.assignment.strategy"] == ("range", "cooperative-sticky")
    with pytest.raises(ConfigError, match="unknown Java assignor"):
        ConsumerConfig(partition_assignment_strategy="org.apache.kafka.clients.consumer.Nope")
    with pytest.raises(ConfigError, match="partition.assignment.strategy"):
        ConsumerConfig(partition_assignment_strategy="nosuchmodule_q.Assignor")


def test_interceptor_classes_import_path_checked() -> None:
    ok = ConsumerConfig(interceptor_classes="collections:OrderedDict")
    assert ok["interceptor.classes"] == ("collections:OrderedDict",)
    with pytest.raises(ConfigError, match="interceptor.classes"):
        ConsumerConfig(interceptor_classes="collections:NoSuchThing")


def test_object_keys() -> None:
    ctx = ssl.create_default_context()
    assert ConsumerConfig(ssl_context=ctx)["ssl.context"] is ctx
    with pytest.raises(ConfigError, match="ssl.SSLContext"):
        ConsumerConfig(ssl_context="yes")
    with pytest.raises(ConfigError, match="token"):
        ConsumerConfig(sasl_oauthbearer_token_provider="token")


# ----------------------------------------------------------------------------- passwords


def test_password_is_hidden_everywhere() -> None:
    secret = "hunter2-very-secret"
    config = ConsumerConfig(ssl_key_password=secret, sasl_username="u", sasl_password=secret)
    assert isinstance(config["ssl.key.password"], Password)
    assert config.get_password("ssl.key.password") == secret
    assert config["sasl.password"].value == secret
    assert secret not in repr(config)
    assert secret not in str(config)
    assert secret not in repr(dict(config))
    assert secret not in str(config["ssl.key.password"])
    with pytest.raises(ConfigError) as info:
        ConsumerConfig({"ssl.key.password": secret}, ssl_key_password=secret + "x")
    assert secret not in str(info.value)
    with pytest.raises(ConfigError) as info2:
        ConsumerConfig(ssl_key_password=123)
    assert "123" not in str(info2.value)


def test_jaas_parse_errors_hide_the_secret() -> None:
    secret = "p@ss-word-xyz"
    with pytest.raises(ConfigError) as info:
        parse_jaas_config(f'Module required username="u" password="{secret}"')  # no ';'
    assert secret not in str(info.value)
    with pytest.raises(ConfigError) as info:
        parse_jaas_config(f'Module bogus password="{secret}";')
    assert secret not in str(info.value)


def test_jaas_parsing() -> None:
    jaas = parse_jaas_config(
        "org.apache.kafka.common.security.scram.ScramLoginModule required\n"
        '  username="alice" password="a \\"quoted\\" pw" tokenauth=true;'
    )
    assert jaas.login_module.endswith("ScramLoginModule")
    assert jaas.control_flag == "required"
    assert dict(jaas.options) == {
        "username": "alice",
        "password": 'a "quoted" pw',
        "tokenauth": "true",
    }
    assert "quoted" not in repr(jaas)
    with pytest.raises(ConfigError, match="only one login module"):
        parse_jaas_config("A required; B required;")
    with pytest.raises(ConfigError, match="key=value"):
        parse_jaas_config("A required user pass;")


# ----------------------------------------------------------------------------- security checks


def test_sasl_requires_credentials_and_refuses_gssapi() -> None:
    with pytest.raises(ConfigError, match="GSSAPI is not supported"):
        ConsumerConfig(security_protocol="SASL_SSL")
    with pytest.raises(ConfigError, match="needs credentials"):
        ConsumerConfig(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256")
    with pytest.raises(ConfigError, match="sasl.oauthbearer.token.provider"):
        ConsumerConfig(security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER")
    with pytest.raises(ConfigError, match="sasl.password is not"):
        ConsumerConfig(sasl_username="u")
    config = ConsumerConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="scram-sha-512",
        sasl_username="u",
        sasl_password="p",
    )
    assert config["sasl.mechanism"] == "SCRAM-SHA-512"
    assert config.sasl_credentials() == ("u", "p")
    oauth = ConsumerConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_provider=lambda: "tok",
    )
    assert callable(oauth["sasl.oauthbearer.token.provider"])
    assert oauth["sasl.oauthbearer.token.callback"] is oauth["sasl.oauthbearer.token.provider"]

    class Provider:
        def token(self) -> str:
            return "tok"

    by_object = ConsumerConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_provider=Provider(),
    )
    assert by_object["sasl.oauthbearer.token.callback"]() == "tok"
    by_callback = ConsumerConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_callback=lambda: "t2",
    )
    assert by_callback["sasl.oauthbearer.token.provider"]() == "t2"
    with pytest.raises(ConfigError, match="not both"):
        ConsumerConfig(
            sasl_oauthbearer_token_callback=lambda: "a", sasl_oauthbearer_token_provider=lambda: "b"
        )
    with pytest.raises(ConfigError, match="mapping of str"):
        ConsumerConfig(sasl_oauthbearer_extensions={"a": 1})
    # GSSAPI is only an error when SASL is actually used.
    assert ConsumerConfig()["sasl.mechanism"] == "GSSAPI"


def test_explicit_username_wins_over_jaas() -> None:
    config = ConsumerConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_jaas_config="org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="jaasuser" password="jaaspw";',
        sasl_username="kw",
        sasl_password="kwpw",
    )
    assert config.sasl_credentials() == ("kw", "kwpw")


def test_ssl_store_checks() -> None:
    with pytest.raises(ConfigError, match="convert the store to PEM"):
        ConsumerConfig(ssl_truststore_location="/x.jks", ssl_truststore_type="JKS")
    pem = ConsumerConfig(ssl_truststore_location="/x.pem", ssl_truststore_type="pem")
    assert pem["ssl.truststore.type"] == "PEM"
    with pytest.raises(ConfigError, match="certificate.chain"):
        ConsumerConfig(ssl_keystore_key="-----BEGIN PRIVATE KEY-----")
    assert (
        ConsumerConfig(ssl_endpoint_identification_algorithm="")[
            "ssl.endpoint.identification.algorithm"
        ]
        == ""
    )
    with pytest.raises(ConfigError, match="ssl.enabled.protocols"):
        ConsumerConfig(ssl_enabled_protocols="TLSv1.2,SSLv2")


# ----------------------------------------------------------------------------- Java post-processing


def test_group_rules() -> None:
    with pytest.raises(ConfigError, match="enable.auto.commit cannot be true"):
        ConsumerConfig(enable_auto_commit=True)
    assert ConsumerConfig(group_id="g")["enable.auto.commit"] is True
    with pytest.raises(ConfigError, match="heartbeat.interval.ms"):
        ConsumerConfig(group_id="g", heartbeat_interval_ms=10000, session_timeout_ms=10000)
    with pytest.raises(ConfigError, match="group.remote.assignor"):
        ConsumerConfig(group_remote_assignor="uniform")
    assert (
        ConsumerConfig(group_protocol="consumer", group_remote_assignor="uniform")[
            "group.remote.assignor"
        ]
        == "uniform"
    )
    # The consumer protocol's timers and assignor are the broker's: its classic-only keys are
    # refused, all named, as Java's ConsumerConfig does (an explicit default too).
    with pytest.raises(
        ConfigError,
        match=r"^partition\.assignment\.strategy, session\.timeout\.ms cannot be set when "
        r"group\.protocol=consumer$",
    ):
        ConsumerConfig(
            group_id="g",
            group_protocol="consumer",
            session_timeout_ms=45000,
            partition_assignment_strategy="range",
        )
    with pytest.raises(ConfigError, match="heartbeat.interval.ms cannot be set"):
        ConsumerConfig(
            {"group.id": "g", "group.protocol": "CONSUMER", "heartbeat.interval.ms": 100}
        )
    assert ConsumerConfig(group_id="g", group_protocol="consumer")["session.timeout.ms"] == 45000
    with pytest.raises(ConfigError, match="group.instance.id"):
        ConsumerConfig(group_instance_id="has space")
    with pytest.raises(ConfigError, match="group.instance.id"):
        ConsumerConfig(group_instance_id="")


def test_client_id_generation() -> None:
    a = ConsumerConfig(group_id="orders")
    b = ConsumerConfig(group_id="orders")
    assert a["client.id"].startswith("consumer-orders-")
    assert a["client.id"] != b["client.id"]
    static = ConsumerConfig(group_id="orders", group_instance_id="inst-1")
    assert static["client.id"] == "consumer-orders-inst-1"
    assert ConsumerConfig(client_id="mine")["client.id"] == "mine"
    # Wrapping a config again keeps its generated id.
    assert ConsumerConfig(a)["client.id"] == a["client.id"]


def test_reconnect_backoff_alone_disables_exponential() -> None:
    config = ConsumerConfig(reconnect_backoff_ms=200)
    assert config["reconnect.backoff.max.ms"] == 200
    both = ConsumerConfig(reconnect_backoff_ms=200, reconnect_backoff_max_ms=5000)
    assert both["reconnect.backoff.max.ms"] == 5000


def test_producer_rules() -> None:
    assert ProducerConfig(acks=-1)["acks"] == "all"
    assert ProducerConfig(acks="1")["enable.idempotence"] is False
    with pytest.raises(ConfigError, match="requires acks=all"):
        ProducerConfig(acks="1", enable_idempotence=True)
    with pytest.raises(ConfigError, match="compression.type"):
        ProducerConfig(compression_type="brotli")
    with pytest.raises(ConfigError, match="transactional.id"):
        ProducerConfig(transactional_id="tx")


def test_originals_replace_and_pickle() -> None:
    config = ConsumerConfig({"group.id": "g"}, max_poll_records=3)
    assert config.originals() == {"group.id": "g", "max.poll.records": 3}
    assert config.is_set("max_poll_records") and not config.is_set("fetch.min.bytes")
    other = config.replace(max_poll_records=4)
    assert other["max.poll.records"] == 4 and config["max.poll.records"] == 3
    assert isinstance(other, ConsumerConfig)
    secret = ConsumerConfig(ssl_key_password="pw")
    restored = pickle.loads(pickle.dumps(secret))
    assert restored == secret
    assert restored.get_password("ssl.key.password") == "pw"


def test_definitions_metadata() -> None:
    key = ConsumerConfig.definition("fetch_min_bytes")
    assert key.name == "fetch.min.bytes"
    assert key.type is ConfigType.INT
    assert key.doc
    for definition in ConsumerConfig.definitions().values():
        assert definition.doc, definition.name

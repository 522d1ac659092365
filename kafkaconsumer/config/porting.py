"""What to use instead of kafka-python's and confluent-kafka's (librdkafka's) settings.

Code moved over from those clients carries their option names: kafka-python's keyword arguments
(``ssl_cafile``, ``consumer_timeout_ms``, ``api_version``, ...) and librdkafka's properties
(``fetch.wait.max.ms``, ``debug``, ``enable.partition.eof``, ...). Where such a name is not one
of our keys, the configuration error names our equivalent, or says why none is needed, instead of
suggesting whichever of our keys happens to be spelled alike. Names that are Java keys as well
are not listed here: they are our keys (or refused with Java's reason).

The tables cover every key of kafka-python's ``KafkaConsumer`` (2.x and 1.4) and every consumer
and global property of librdkafka 2.x, with confluent-kafka's Python-only callbacks; the porting
guides (docs/porting-kafka-python.md, docs/porting-confluent-kafka.md) show the same.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "KAFKA_PYTHON",
    "LIBRDKAFKA",
    "kafka_python_assignor",
    "porting_hint",
    "positional_topics_message",
]

# -- shared advice ------------------------------------------------------------------------
_NEGOTIATED = (
    "not needed: the client asks each broker which versions it supports (ApiVersions) and uses "
    "the newest both sides know, down to Kafka 0.10"
)
_NO_KERBEROS = (
    "GSSAPI (Kerberos) is not supported; use sasl.mechanism PLAIN, SCRAM-SHA-256, "
    "SCRAM-SHA-512 or OAUTHBEARER"
)
_LOGGING = (
    "use Python's logging: logging.getLogger('kafkaconsumer').setLevel(logging.DEBUG) (or a "
    "handler on that logger)"
)
_BUILT_IN = "not configurable: the network client (one selector for every connection) is built in"
_SSL_CONTEXT = (
    "build an ssl.SSLContext with what you need and pass it as 'ssl.context' (ssl_context=...)"
)
_OAUTH = (
    "librdkafka's OAUTHBEARER settings: pass a callable returning the access token as "
    "'sasl.oauthbearer.token.provider' (confluent-kafka's oauth_cb returns (token, expiry): "
    "return just the token), or use Java's sasl.oauthbearer.* keys (docs/configuration.md)"
)
_METADATA_ON_DEMAND = (
    "not needed: metadata is refreshed at once when a leader or topic changes (retry.backoff.ms "
    "apart) and otherwise every 'metadata.max.age.ms'"
)
_FETCH_BOUNDS = (
    "fetched data is bounded by 'fetch.max.bytes' and 'max.partition.fetch.bytes' (the next "
    "fetch goes out while records are handed out)"
)
_PRODUCER_ONLY = (
    "a producer setting; a consumer's fetches are bounded by 'fetch.max.bytes' and "
    "'max.partition.fetch.bytes'"
)
_COMMIT_CALLBACK = (
    "pass the callback to commit_async(offsets, callback); it is called as "
    "callback(offsets, exception). Auto-commit failures are logged"
)
_LIBRDKAFKA_INTERNAL = "a librdkafka internal with no counterpart in Python: remove it"
_STATS = (
    "read consumer.metrics() (Java's metric names and groups), or pass an object in "
    "'metric.reporters' to be told about every metric"
)
_NO_OFFSET_STORE = (
    "offsets are stored in the consumer group on the broker only: commit_sync() / commit_async()"
)

#: kafka-python ``KafkaConsumer`` keyword arguments that are not our keys.
KAFKA_PYTHON: dict[str, str] = {
    "api_version": _NEGOTIATED + "; remove it",
    "api_version_auto_timeout_ms": _NEGOTIATED
    + ", while connecting (bounded by 'socket.connection.setup.timeout.ms')",
    "bootstrap_timeout_ms": (
        "no single equivalent: each blocking call has its own timeout (poll(timeout_ms), "
        "'default.api.timeout.ms' for the others) and connecting is bounded by "
        "'socket.connection.setup.timeout.ms'"
    ),
    "consumer_timeout_ms": (
        "iteration (for record in consumer:) polls for ever; to stop once no record arrived for "
        "a while, loop over consumer.poll(timeout_ms=...) and break when it returns no records"
    ),
    "default_offset_commit_callback": _COMMIT_CALLBACK,
    "enable_incremental_fetch_sessions": "use 'enable.fetch.sessions' (enable_fetch_sessions=...)",
    "kafka_client": _BUILT_IN,
    "net": _BUILT_IN,
    "selector": _BUILT_IN,
    "legacy_iterator": "not needed: iteration hands out records one at a time",
    "max_in_flight_requests_per_connection": (
        "a producer setting; the consumer (as Java's) has no such limit"
    ),
    "metric_group_prefix": (
        "not configurable: metrics carry Java's group names (consumer-metrics, "
        "consumer-fetch-manager-metrics, consumer-coordinator-metrics)"
    ),
    "metrics_enabled": (
        "metrics are always kept, as in Java (cheaply); 'metrics.recording.level' chooses which "
        "sensors record and 'metric.reporters' who is told"
    ),
    "proxy_url": ("no proxy support: the client connects to the addresses the brokers advertise"),
    "socks5_proxy": "no proxy support: the client connects to the addresses the brokers advertise",
    "receive_message_max_bytes": _FETCH_BOUNDS,
    "sasl_kerberos_domain_name": _NO_KERBEROS,
    "sasl_kerberos_name": _NO_KERBEROS,
    "sasl_oauth_token_provider": (
        "use 'sasl.oauthbearer.token.provider' (sasl_oauthbearer_token_provider=...): an object "
        "with a token() method, as kafka-python's AbstractTokenProvider, works unchanged"
    ),
    "sasl_plain_username": (
        "use 'sasl.username' (sasl_username=...), with 'sasl.password'; they serve PLAIN and SCRAM"
    ),
    "sasl_plain_password": (
        "use 'sasl.password' (sasl_password=...), with 'sasl.username'; they serve PLAIN and SCRAM"
    ),
    "sock_chunk_bytes": (
        "not needed: sockets are read in large chunks; 'receive.buffer.bytes' sets the socket's "
        "receive buffer"
    ),
    "sock_chunk_buffer_count": "not needed: sockets are read in large chunks",
    "socket_options": (
        "not configurable: every connection sets TCP_NODELAY and SO_KEEPALIVE; "
        "'send.buffer.bytes' and 'receive.buffer.bytes' set the socket buffers"
    ),
    "ssl_cafile": (
        "use 'ssl.truststore.location' (or librdkafka's 'ssl.ca.location'): a PEM file of "
        "trusted CA certificates"
    ),
    "ssl_certfile": (
        "use 'ssl.certificate.location' (PEM client certificate) with 'ssl.key.location' for "
        "its key, or 'ssl.keystore.location' for one PEM file holding both"
    ),
    "ssl_keyfile": (
        "use 'ssl.key.location' (PEM private key), with its password in 'ssl.key.password'"
    ),
    "ssl_password": "use 'ssl.key.password' (the private key's password)",
    "ssl_check_hostname": (
        "use 'ssl.endpoint.identification.algorithm': 'https' (the default) checks the broker's "
        "host name, '' turns the check off"
    ),
    "ssl_ciphers": "use 'ssl.cipher.suites': a list of OpenSSL or IANA cipher names",
    "ssl_crlfile": (
        "no key for revocation lists: "
        + _SSL_CONTEXT
        + " (load_verify_locations(crlfile), VERIFY_CRL_CHECK_LEAF added to verify_flags)"
    ),
}

#: librdkafka (confluent-kafka) consumer and global properties that are not our keys.
LIBRDKAFKA: dict[str, str] = {
    "metadata.broker.list": "use 'bootstrap.servers'",
    "auto.commit.enable": "use 'enable.auto.commit'",
    "fetch.wait.max.ms": "use 'fetch.max.wait.ms'",
    "fetch.message.max.bytes": "use 'max.partition.fetch.bytes'",
    "fetch.error.backoff.ms": "use 'retry.backoff.ms' (up to 'retry.backoff.max.ms')",
    "fetch.queue.backoff.ms": "not needed: " + _FETCH_BOUNDS,
    "queued.min.messages": "not needed: " + _FETCH_BOUNDS,
    "queued.max.messages.kbytes": "not needed: " + _FETCH_BOUNDS,
    "receive.message.max.bytes": _FETCH_BOUNDS,
    "message.max.bytes": _PRODUCER_ONLY,
    "message.copy.max.bytes": _LIBRDKAFKA_INTERNAL,
    "max.in.flight": "a producer setting; the consumer (as Java's) has no such limit",
    "max.in.flight.requests.per.connection": (
        "a producer setting; the consumer (as Java's) has no such limit"
    ),
    "topic.metadata.refresh.interval.ms": "use 'metadata.max.age.ms'",
    "topic.metadata.refresh.fast.interval.ms": _METADATA_ON_DEMAND,
    "topic.metadata.refresh.fast.cnt": _METADATA_ON_DEMAND,
    "topic.metadata.refresh.sparse": _METADATA_ON_DEMAND,
    "topic.metadata.propagation.max.ms": _METADATA_ON_DEMAND,
    "topic.blacklist": (
        "subscribe to a list of topics, or to a pattern (subscribe(pattern=...)) that leaves "
        "those topics out"
    ),
    "debug": _LOGGING,
    "log_level": _LOGGING,
    "log_cb": _LOGGING,
    "logger": _LOGGING,
    "log.queue": _LOGGING,
    "log.thread.name": _LOGGING,
    "log.connection.close": "not needed: connection failures are logged once per change",
    "socket.timeout.ms": "use 'request.timeout.ms'",
    "socket.blocking.max.ms": _LIBRDKAFKA_INTERNAL,
    "socket.send.buffer.bytes": "use 'send.buffer.bytes'",
    "socket.receive.buffer.bytes": "use 'receive.buffer.bytes'",
    "socket.keepalive.enable": "not needed: every connection sets SO_KEEPALIVE",
    "socket.nagle.disable": "not needed: every connection sets TCP_NODELAY",
    "socket.max.fails": (
        "not needed: a failed connection is retried after 'reconnect.backoff.ms', growing to "
        "'reconnect.backoff.max.ms'"
    ),
    "broker.address.ttl": (
        "not needed: host names are resolved when a connection is made ('client.dns.lookup')"
    ),
    "broker.address.family": (
        "not configurable: every address of a host name is tried in turn "
        "(client.dns.lookup=use_all_dns_ips); give IPv4 or IPv6 addresses to choose"
    ),
    "reconnect.backoff.jitter.ms": (
        "not needed: 20% jitter is applied between 'reconnect.backoff.ms' and "
        "'reconnect.backoff.max.ms'"
    ),
    "statistics.interval.ms": _STATS,
    "stats_cb": _STATS,
    "throttle_cb": (
        "broker throttling shows in consumer.metrics() (fetch-throttle-time-avg and -max)"
    ),
    "error_cb": (
        "errors are raised by the call they concern (poll(), commit_sync(), ...); connection "
        "failures are logged on the 'kafkaconsumer' logger"
    ),
    "enabled_events": _LIBRDKAFKA_INTERNAL,
    "background_event_cb": _LIBRDKAFKA_INTERNAL,
    "socket_cb": _LIBRDKAFKA_INTERNAL,
    "connect_cb": _LIBRDKAFKA_INTERNAL,
    "closesocket_cb": _LIBRDKAFKA_INTERNAL,
    "open_cb": _LIBRDKAFKA_INTERNAL,
    "resolve_cb": _LIBRDKAFKA_INTERNAL,
    "opaque": _LIBRDKAFKA_INTERNAL,
    "internal.termination.signal": _LIBRDKAFKA_INTERNAL,
    "enable.random.seed": _LIBRDKAFKA_INTERNAL,
    "builtin.features": (
        "not needed: every codec (gzip, snappy, lz4, zstd), TLS and SASL PLAIN, SCRAM and "
        "OAUTHBEARER are always available"
    ),
    "plugin.library.paths": "no plugins: use 'interceptor.classes' for consumer interceptors",
    "interceptors": "use 'interceptor.classes' (Python objects or import paths)",
    "default_topic_conf": "set the topic-level keys ('auto.offset.reset') at the top level",
    "api.version.request": _NEGOTIATED,
    "api.version.request.timeout.ms": _NEGOTIATED,
    "api.version.fallback.ms": _NEGOTIATED,
    "broker.version.fallback": _NEGOTIATED,
    "ssl.key.pem": "use 'ssl.keystore.key' (the private key as PEM text)",
    "ssl_key": "use 'ssl.keystore.key' (the private key as PEM text)",
    "ssl.certificate.pem": "use 'ssl.keystore.certificate.chain' (the certificate as PEM text)",
    "ssl_certificate": "use 'ssl.keystore.certificate.chain' (the certificate as PEM text)",
    "ssl.ca.pem": "use 'ssl.truststore.certificates' (the CA certificates as PEM text)",
    "ssl_ca": "use 'ssl.truststore.certificates' (the CA certificates as PEM text)",
    "ssl.ca.certificate.stores": (
        "not needed: the system trust store is used when no trust store is set"
    ),
    "ssl.crl.location": (
        "no key for revocation lists: "
        + _SSL_CONTEXT
        + " (load_verify_locations() with the CRL, VERIFY_CRL_CHECK_LEAF added to verify_flags)"
    ),
    "ssl.curves.list": _SSL_CONTEXT,
    "ssl.sigalgs.list": _SSL_CONTEXT,
    "ssl.providers": _SSL_CONTEXT,
    "ssl.engine.location": _SSL_CONTEXT,
    "ssl.engine.id": _SSL_CONTEXT,
    "ssl_engine_callback_data": _SSL_CONTEXT,
    "ssl.certificate.verify_cb": _SSL_CONTEXT,
    "enable.ssl.certificate.verification": (
        "certificate verification is not switched off by a key: for a test set-up, "
        + _SSL_CONTEXT
        + " with verify_mode=ssl.CERT_NONE; 'ssl.endpoint.identification.algorithm'='' turns "
        "off the host name check alone"
    ),
    "https.ca.location": (
        "the trust store of librdkafka's OIDC token requests: no such key here "
        "(see sasl.oauthbearer.* in docs/configuration.md)"
    ),
    "https.ca.pem": (
        "the trust store of librdkafka's OIDC token requests: no such key here "
        "(see sasl.oauthbearer.* in docs/configuration.md)"
    ),
    "sasl.mechanisms": "use 'sasl.mechanism' (one mechanism)",
    "sasl.kerberos.principal": _NO_KERBEROS,
    "sasl.kerberos.keytab": _NO_KERBEROS,
    "sasl.oauthbearer.config": _OAUTH,
    "enable.sasl.oauthbearer.unsecure.jwt": _OAUTH,
    "oauthbearer_token_refresh_cb": _OAUTH,
    "oauth_cb": _OAUTH,
    "sasl.oauthbearer.method": _OAUTH,
    "sasl.oauthbearer.client.id": _OAUTH,
    "sasl.oauthbearer.client.secret": _OAUTH,
    "sasl.oauthbearer.grant.type": _OAUTH,
    "sasl.oauthbearer.metadata.authentication.type": _OAUTH,
    "group.protocol.type": "not needed: a consumer group's protocol type is always 'consumer'",
    "coordinator.query.interval.ms": (
        "not needed: the group coordinator is looked up again when it moves or fails"
    ),
    "enable.auto.offset.store": (
        "no offset store: with enable.auto.commit=false, commit the offsets of the records "
        "processed with commit_sync(offsets) or commit_async(offsets)"
    ),
    "offset.store.method": _NO_OFFSET_STORE,
    "offset.store.path": _NO_OFFSET_STORE,
    "offset.store.sync.interval.ms": _NO_OFFSET_STORE,
    "consume_cb": "iterate what poll() returns (or the consumer itself)",
    "consume.callback.max.messages": "use 'max.poll.records'",
    "rebalance_cb": "pass a ConsumerRebalanceListener to subscribe(topics, listener=...)",
    "offset_commit_cb": _COMMIT_CALLBACK,
    "on_commit": _COMMIT_CALLBACK,
    "enable.partition.eof": (
        "no end-of-partition events: consumer.current_lag(tp) == 0, or position(tp) compared "
        "with end_offsets([tp]), says a partition is caught up"
    ),
}

#: Keys whose advice names consumer settings: the producer's and admin's tables do not use it.
_CONSUMER_ONLY = frozenset(
    {
        "bootstrap_timeout_ms",
        "consumer_timeout_ms",
        "default_offset_commit_callback",
        "enable_incremental_fetch_sessions",
        "legacy_iterator",
        "receive_message_max_bytes",
        "max_in_flight_requests_per_connection",
        "max.in.flight",
        "max.in.flight.requests.per.connection",
        "message.max.bytes",
        "receive.message.max.bytes",
        "auto.commit.enable",
        "fetch.wait.max.ms",
        "fetch.message.max.bytes",
        "fetch.error.backoff.ms",
        "fetch.queue.backoff.ms",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "topic.blacklist",
        "throttle_cb",
        "group.protocol.type",
        "coordinator.query.interval.ms",
        "enable.auto.offset.store",
        "offset.store.method",
        "offset.store.path",
        "offset.store.sync.interval.ms",
        "consume_cb",
        "consume.callback.max.messages",
        "rebalance_cb",
        "offset_commit_cb",
        "on_commit",
        "enable.partition.eof",
        "plugin.library.paths",
        "interceptors",
        "default_topic_conf",
    }
)


def porting_hint(key: str, config_class: str) -> str | None:
    """What to do instead of ``key`` when it is another client's setting (kafka-python's or
    librdkafka's), for an error of ``config_class`` (``"ConsumerConfig"``, ...): ``"a
    kafka-python setting: use ..."``; else None."""
    consumer = config_class == "ConsumerConfig"
    for client, table in (("kafka-python", KAFKA_PYTHON), ("librdkafka", LIBRDKAFKA)):
        advice = table.get(key)
        if advice is not None and (consumer or key not in _CONSUMER_ONLY):
            return f"a {client} setting: {advice}"
    return None


def positional_topics_message(topics: tuple[Any, ...]) -> str:
    """The error for kafka-python's ``KafkaConsumer("orders", ...)``: topics go to subscribe()."""
    names = ", ".join(repr(t) for t in topics)
    return (
        f"KafkaConsumer takes no topics as arguments (kafka-python's KafkaConsumer({names}, "
        f"...)): build it with the configuration alone, then call "
        f"consumer.subscribe([{names}]) (or assign() partitions)"
    )


#: kafka-python's assignor classes and our names for the same strategies.
_KAFKA_PYTHON_ASSIGNORS = {
    "RangePartitionAssignor": "range",
    "RoundRobinPartitionAssignor": "roundrobin",
    "StickyPartitionAssignor": "sticky",
}


def kafka_python_assignor(item: Any) -> str | None:
    """The error for one of kafka-python's assignor classes (or its import path) given as a
    ``partition.assignment.strategy`` entry, naming our strategy; None for anything else."""
    if isinstance(item, str):
        module, _, name = item.rpartition(".")
    else:
        module = str(getattr(item, "__module__", "") or "")
        name = str(getattr(item, "__name__", "") or type(item).__name__)
    if not module.startswith("kafka.coordinator.assignors") or name not in _KAFKA_PYTHON_ASSIGNORS:
        return None
    ours = _KAFKA_PYTHON_ASSIGNORS[name]
    return (
        f"{name} is kafka-python's assignor: name the strategy instead, "
        f"partition_assignment_strategy={ours!r} (a list such as ['range', 'roundrobin'] keeps "
        f"an order of preference; 'cooperative-sticky' rebalances cooperatively)"
    )

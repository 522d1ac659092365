"""Client telemetry (KIP-714): the subscription and push cycle, its error handling, the metric
names and the OTLP payload, against a fake clock and the scripted fake broker."""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.errors import IllegalStateError, KafkaConnectionError, UnsupportedVersionError
from kafkaconsumer.metrics import CumulativeSum, Metrics, Value
from kafkaconsumer.network.client_telemetry_reporter import (
    ClientTelemetryReporter,
    resource_attributes,
)
from kafkaconsumer.network.client_telemetry_sender import (
    DEFAULT_PUSH_INTERVAL_MS,
    DISABLED_INTERVAL_MS,
    ClientTelemetrySender,
    ClientTelemetryState,
    ClientTelemetrySubscription,
    error_interval_ms,
    metric_selector,
    preferred_compression_type,
)
from kafkaconsumer.network.kafka_metrics_collector import (
    KafkaMetricsCollector,
    SinglePointMetric,
    encode_metrics_data,
    telemetry_metric_name,
    telemetry_tags,
)
from kafkaconsumer.protocol import SUPPORTED_VERSIONS, ApiKey
from kafkaconsumer.record.codecs import decompress
from kafkaconsumer.structs import TopicPartition
from tests.support.fake_broker import DEFAULT_API_VERSIONS, FakeCluster
from tests.support.mock_time import MockTime

pytestmark = pytest.mark.timeout(60)

S = ClientTelemetryState
INSTANCE = uuid.UUID("d05ef72a-6e3d-48ad-afdc-59bb086f5bd2")


def subscription_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "client_instance_id": INSTANCE,
        "subscription_id": 7,
        "accepted_compression_types": [4, 3, 1, 2],
        "push_interval_ms": 1000,
        "telemetry_max_bytes": 1 << 20,
        "delta_temporality": True,
        "requested_metrics": ["org.apache.kafka.consumer."],
    }
    body.update(overrides)
    return body


def make_sender(
    clock: MockTime,
    payload: Callable[[ClientTelemetrySubscription, int], tuple[bytes, int]] | None = None,
) -> ClientTelemetrySender:
    return ClientTelemetrySender(
        clock, payload or (lambda sub, codec: (b"m", codec)), rng=random.Random(1)
    )


def subscribed(clock: MockTime, **overrides: Any) -> ClientTelemetrySender:
    sender = make_sender(clock)
    request = sender.create_request()
    assert request is not None and request[0] == ApiKey.GET_TELEMETRY_SUBSCRIPTIONS
    sender.handle_subscriptions_response(subscription_body(**overrides))
    return sender


# ------------------------------------------------------------------ the pieces


def test_state_transitions_follow_the_cycle() -> None:
    """Only the transitions of the telemetry cycle are allowed; TERMINATED is final."""
    assert (
        S.SUBSCRIPTION_NEEDED.validate_transition(S.SUBSCRIPTION_IN_PROGRESS)
        is S.SUBSCRIPTION_IN_PROGRESS
    )
    assert (
        S.PUSH_IN_PROGRESS.validate_transition(S.TERMINATING_PUSH_NEEDED)
        is S.TERMINATING_PUSH_NEEDED
    )
    with pytest.raises(ValueError):
        S.SUBSCRIPTION_NEEDED.validate_transition(S.PUSH_NEEDED)
    with pytest.raises(ValueError):
        S.TERMINATING_PUSH_IN_PROGRESS.validate_transition(S.PUSH_NEEDED)
    for state in S:
        with pytest.raises(ValueError):
            S.TERMINATED.validate_transition(state)


def test_error_codes_map_to_waits_as_in_java() -> None:
    """Resubscribe at once, after the interval, or never, per error code."""
    assert error_interval_ms(0, 1000) is None
    assert error_interval_ms(117, 1000) == 0  # UNKNOWN_SUBSCRIPTION_ID
    assert error_interval_ms(76, 1000) == 0  # UNSUPPORTED_COMPRESSION_TYPE
    assert error_interval_ms(118, 1000) == 1000  # TELEMETRY_TOO_LARGE
    assert error_interval_ms(89, -1) == DEFAULT_PUSH_INTERVAL_MS  # THROTTLING_QUOTA_EXCEEDED
    for code in (42, 87, 35, 3):  # INVALID_REQUEST, INVALID_RECORD, UNSUPPORTED_VERSION, other
        assert error_interval_ms(code, 1000) == DISABLED_INTERVAL_MS


def test_selector_and_compression_choice() -> None:
    """Requested metrics are name prefixes ('*' is all, none is nothing); the compression is
    the broker's first accepted type this client can write."""
    assert metric_selector([]) is None
    everything = metric_selector(["*"])
    assert everything is not None and everything("anything")
    some = metric_selector(["org.apache.kafka.consumer.fetch", "org.apache.kafka.consumer.poll"])
    assert some is not None
    assert some("org.apache.kafka.consumer.fetch.manager.fetch.latency.avg")
    assert not some("org.apache.kafka.consumer.coordinator.commit.rate")
    assert preferred_compression_type([4, 3, 1, 2], set()) == 4
    assert preferred_compression_type([4, 3], {4}) == 3
    assert preferred_compression_type([9, 2], set()) == 2
    assert preferred_compression_type([], set()) == 0


def test_metric_names_follow_javas_convention() -> None:
    """Domain, group without '-metrics', name, with dots for dashes; tags snake_case without
    the client id."""
    assert (
        telemetry_metric_name("consumer-fetch-manager-metrics", "fetch-latency-avg")
        == "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg"
    )
    assert telemetry_metric_name("consumer-metrics", "last-poll-seconds-ago") == (
        "org.apache.kafka.consumer.last.poll.seconds.ago"
    )
    assert telemetry_tags({"client-id": "c", "topic": "t", "partition": "0"}) == {
        "topic": "t",
        "partition": "0",
    }
    assert resource_attributes(
        {"group.id": "g", "group.instance.id": None, "client.rack": "r1"}
    ) == {
        "group_id": "g",
        "client_rack": "r1",
    }


def test_collector_sends_sums_as_deltas_or_totals_and_gauges_as_they_are() -> None:
    """Counters are monotonic sums (deltas since the last push, or totals since first seen);
    other statistics and gauges are gauges."""
    clock = MockTime()
    metrics = Metrics(time=clock)
    counter = metrics.sensor("records")
    counter.add(
        metrics.metric_name(
            "records-total", "consumer-fetch-manager-metrics", tags={"client-id": "c"}
        ),
        CumulativeSum(),
    )
    level = metrics.sensor("level")
    level.add(metrics.metric_name("level", "consumer-fetch-manager-metrics"), Value())
    collector = KafkaMetricsCollector(metrics, clock)
    everything = metric_selector(["*"])
    assert everything is not None

    counter.record(5)
    level.record(3)
    first = {p.name: p for p in collector.collect(everything, delta=True)}
    total = first["org.apache.kafka.consumer.fetch.manager.records.total"]
    assert (total.kind, total.value, total.attributes) == (SinglePointMetric.DELTA_SUM, 5.0, {})
    gauge = first["org.apache.kafka.consumer.fetch.manager.level"]
    assert (gauge.kind, gauge.value, gauge.start_ns) == (SinglePointMetric.GAUGE, 3.0, None)

    clock.sleep(1000)
    counter.record(2)
    second = {p.name: p for p in collector.collect(everything, delta=True)}
    delta = second["org.apache.kafka.consumer.fetch.manager.records.total"]
    assert delta.value == 2.0
    assert delta.start_ns == total.time_ns  # the interval starts at the previous push

    cumulative = {p.name: p for p in collector.collect(everything, delta=False)}
    assert cumulative["org.apache.kafka.consumer.fetch.manager.records.total"].value == 7.0
    assert (
        cumulative["org.apache.kafka.consumer.fetch.manager.records.total"].kind
        == SinglePointMetric.SUM
    )

    only_level = metric_selector(["org.apache.kafka.consumer.fetch.manager.level"])
    assert only_level is not None
    assert [p.name for p in collector.collect(only_level, delta=True)] == [
        "org.apache.kafka.consumer.fetch.manager.level"
    ]


def test_payload_is_otlp_metrics_data() -> None:
    """The payload parses as OTLP MetricsData: one resource per metric, with the client's
    resource attributes, monotonic sums with their temporality, gauges as doubles."""
    points = [
        SinglePointMetric("a.gauge", {"topic": "t"}, 1.5, 2_000, SinglePointMetric.GAUGE),
        SinglePointMetric("a.delta", {}, 3.0, 2_000, SinglePointMetric.DELTA_SUM, 1_000),
        SinglePointMetric("a.total", {}, 9.0, 2_000, SinglePointMetric.SUM, 500),
    ]
    data = metrics_pb2.MetricsData.FromString(encode_metrics_data(points, {"group_id": "g"}))
    assert len(data.resource_metrics) == 3
    metrics = {}
    for rm in data.resource_metrics:
        assert [(a.key, a.value.string_value) for a in rm.resource.attributes] == [
            ("group_id", "g")
        ]
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                metrics[m.name] = m
    gauge = metrics["a.gauge"].gauge.data_points[0]
    assert (gauge.as_double, gauge.time_unix_nano) == (1.5, 2_000)
    assert [(a.key, a.value.string_value) for a in gauge.attributes] == [("topic", "t")]
    delta = metrics["a.delta"].sum
    assert (
        delta.is_monotonic
        and delta.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
    )
    assert (delta.data_points[0].as_double, delta.data_points[0].start_time_unix_nano) == (
        3.0,
        1_000,
    )
    total = metrics["a.total"].sum
    assert total.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE


# ------------------------------------------------------------------ the sender


def test_subscription_then_jittered_first_push_then_regular_pushes() -> None:
    """The first request asks with the zero uuid; the first push waits 50-150% of the push
    interval, later ones the interval; the push carries the subscription and compression."""
    clock = MockTime()
    sender = make_sender(clock)
    assert sender.time_to_next_update(30_000) == 0
    request = sender.create_request()
    assert request == (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, {"client_instance_id": uuid.UUID(int=0)})
    assert sender.time_to_next_update(30_000) == 30_000  # in flight
    sender.handle_subscriptions_response(subscription_body())
    assert sender.state is S.PUSH_NEEDED
    assert 500 <= sender.interval_ms <= 1500
    assert sender.client_instance_id(0) == INSTANCE
    # Not due yet: a second polling thread that looked earlier gets nothing to send.
    assert sender.create_request() is None
    clock.sleep(sender.interval_ms)
    assert sender.time_to_next_update(30_000) == 0
    push = sender.create_request()
    assert push is not None and push[0] == ApiKey.PUSH_TELEMETRY
    assert push[1] == {
        "client_instance_id": INSTANCE,
        "subscription_id": 7,
        "terminating": False,
        "compression_type": 4,
        "metrics": b"m",
    }
    sender.handle_push_response({"error_code": 0})
    assert (sender.state, sender.interval_ms, sender.push_count) == (S.PUSH_NEEDED, 1000, 1)


def test_subscription_without_metrics_asks_again_each_interval() -> None:
    """No requested metric: nothing is pushed, the subscription is asked for again after the
    push interval (with the instance id it got)."""
    clock = MockTime()
    sender = subscribed(clock, requested_metrics=[])
    assert sender.state is S.SUBSCRIPTION_NEEDED
    assert sender.time_to_next_update(30_000) == 1000
    clock.sleep(1000)
    assert sender.create_request() == (
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
        {"client_instance_id": INSTANCE},
    )
    assert sender.initiate_close() is False  # nothing to say on close either


@pytest.mark.parametrize(("code", "wait"), [(117, 0), (76, 0), (118, 1000), (89, 1000)])
def test_push_errors_resubscribe(code: int, wait: int) -> None:
    """UNKNOWN_SUBSCRIPTION_ID and UNSUPPORTED_COMPRESSION_TYPE resubscribe at once,
    TELEMETRY_TOO_LARGE and THROTTLING_QUOTA_EXCEEDED after the push interval."""
    clock = MockTime()
    sender = subscribed(clock)
    clock.sleep(2000)
    assert sender.create_request() is not None
    sender.handle_push_response({"error_code": code})
    assert sender.state is S.SUBSCRIPTION_NEEDED and sender.enabled
    assert sender.time_to_next_update(30_000) == wait
    clock.sleep(wait)
    request = sender.create_request()
    assert request == (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, {"client_instance_id": INSTANCE})


@pytest.mark.parametrize("code", [42, 87, 35])
def test_unrecoverable_push_errors_turn_telemetry_off(code: int) -> None:
    """INVALID_REQUEST, INVALID_RECORD and UNSUPPORTED_VERSION end telemetry for good."""
    clock = MockTime()
    sender = subscribed(clock)
    clock.sleep(2000)
    assert sender.create_request() is not None
    sender.handle_push_response({"error_code": code})
    assert not sender.enabled
    assert sender.time_to_next_update(30_000) == DISABLED_INTERVAL_MS


def test_network_failures_wait_five_minutes_or_stop() -> None:
    """A retriable failure waits five minutes before resubscribing; a broker without the API
    turns telemetry off without a warning."""
    clock = MockTime()
    sender = make_sender(clock)
    sender.create_request()
    sender.handle_failed_request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, KafkaConnectionError("cut"))
    assert sender.enabled and sender.state is S.SUBSCRIPTION_NEEDED
    assert sender.time_to_next_update(30_000) == DEFAULT_PUSH_INTERVAL_MS

    sender = make_sender(clock)
    sender.create_request()
    sender.handle_failed_request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, UnsupportedVersionError("no"))
    assert not sender.enabled
    assert sender.client_instance_id(1000) is None  # does not wait: telemetry is off


def test_a_codec_that_fails_is_not_used_again() -> None:
    """A payload that could not be compressed goes out uncompressed, and the next push uses
    the broker's next accepted type."""
    clock = MockTime()
    calls: list[int] = []

    def payload(sub: ClientTelemetrySubscription, codec: int) -> tuple[bytes, int]:
        calls.append(codec)
        return b"raw", 0 if codec == 4 else codec

    sender = make_sender(clock, payload)
    sender.create_request()
    sender.handle_subscriptions_response(subscription_body())
    clock.sleep(2000)
    push = sender.create_request()
    assert push is not None and push[1]["compression_type"] == 0
    sender.handle_push_response({"error_code": 0})
    clock.sleep(1000)
    push = sender.create_request()
    assert push is not None and push[1]["compression_type"] == 3
    assert calls == [4, 3]


def test_terminating_push_only_after_a_subscription() -> None:
    """close asks for one last push marked terminating when a subscription is loaded; after
    it nothing is sent, and responses that come late change nothing."""
    clock = MockTime()
    assert make_sender(clock).initiate_close() is False
    sender = subscribed(clock)
    assert sender.initiate_close() is True
    assert sender.time_to_next_update(30_000) == 0
    push = sender.create_request()
    assert push is not None and push[1]["terminating"] is True
    assert sender.terminating_push_pending()
    sender.handle_push_response({"error_code": 117})  # a push from before close: ignored
    assert sender.terminating_push_pending() and sender.enabled
    sender.handle_push_response({"error_code": 0}, terminating=True)
    assert not sender.terminating_push_pending()
    assert sender.wait_terminating_push(0)
    sender.close()
    assert sender.state is S.TERMINATED
    assert sender.create_request() is None
    assert sender.time_to_next_update(30_000) == DISABLED_INTERVAL_MS


# ------------------------------------------------------------------ against the fake broker


def _versions(base: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    # Without OffsetForLeaderEpoch, which the fake does not serve: positions need no validation.
    return {k: v for k, v in base.items() if k != ApiKey.OFFSET_FOR_LEADER_EPOCH}


def telemetry_cluster() -> FakeCluster:
    """A fake cluster that advertises the telemetry APIs, as a broker with a receiver."""
    return FakeCluster(api_versions=_versions(dict(SUPPORTED_VERSIONS)), topics={"t": 1})


def consumer_for(cluster: FakeCluster, **config: Any) -> KafkaConsumer:
    consumer = KafkaConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "client.id": "tel", **config}
    )
    consumer.assign([TopicPartition("t", 0)])
    return consumer


def poll_until(consumer: KafkaConsumer, done: Callable[[], bool], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "condition not reached in time"
        consumer.poll(50)


def requests_of(cluster: FakeCluster, key: int) -> list[dict[str, Any]]:
    return [body for _, body in cluster.requests(key)]


def test_pushes_reach_the_broker_and_close_sends_the_terminating_one() -> None:
    """Against a broker that takes telemetry: a subscription, pushes of the subscribed
    metrics (zstd, OTLP), the instance id from client_instance_id, a terminating push on
    close."""
    with telemetry_cluster() as cluster:
        cluster.script(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
            [
                subscription_body(
                    push_interval_ms=100,
                    requested_metrics=["org.apache.kafka.consumer.fetch.manager."],
                )
            ],
        )
        cluster.on(ApiKey.PUSH_TELEMETRY, lambda node, header, body: {"error_code": 0})
        consumer = consumer_for(cluster)
        try:
            assert consumer.client_instance_id(10_000) == INSTANCE
            poll_until(consumer, lambda: len(requests_of(cluster, ApiKey.PUSH_TELEMETRY)) >= 2)
        finally:
            consumer.close()
        pushes = requests_of(cluster, ApiKey.PUSH_TELEMETRY)
        assert pushes[-1]["terminating"] is True
        assert not any(p["terminating"] for p in pushes[:-1])
        for push in pushes:
            assert (
                push["client_instance_id"],
                push["subscription_id"],
                push["compression_type"],
            ) == (INSTANCE, 7, 4)
            data = metrics_pb2.MetricsData.FromString(decompress(4, bytes(push["metrics"])))
            names = {
                m.name
                for rm in data.resource_metrics
                for sm in rm.scope_metrics
                for m in sm.metrics
            }
            assert "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg" in names
            assert all(n.startswith("org.apache.kafka.consumer.fetch.manager.") for n in names)


def test_unknown_subscription_resubscribes_with_the_same_instance_id() -> None:
    """A push answered UNKNOWN_SUBSCRIPTION_ID is followed at once by a new subscription
    request that keeps the client instance id."""
    with telemetry_cluster() as cluster:
        cluster.on(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
            lambda node, header, body: subscription_body(push_interval_ms=100),
        )
        cluster.script(ApiKey.PUSH_TELEMETRY, [{"error_code": 117}])
        cluster.on(ApiKey.PUSH_TELEMETRY, lambda node, header, body: {"error_code": 0})
        consumer = consumer_for(cluster)
        try:
            poll_until(consumer, lambda: len(requests_of(cluster, ApiKey.PUSH_TELEMETRY)) >= 2)
        finally:
            consumer.close(timeout_ms=0)
        asks = requests_of(cluster, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
        assert [a["client_instance_id"] for a in asks[:2]] == [uuid.UUID(int=0), INSTANCE]


def test_invalid_request_turns_telemetry_off() -> None:
    """INVALID_REQUEST on a push ends telemetry: no request follows."""
    with telemetry_cluster() as cluster:
        cluster.on(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
            lambda node, header, body: subscription_body(push_interval_ms=100),
        )
        cluster.on(ApiKey.PUSH_TELEMETRY, lambda node, header, body: {"error_code": 42})
        consumer = consumer_for(cluster)
        try:
            poll_until(consumer, lambda: len(requests_of(cluster, ApiKey.PUSH_TELEMETRY)) >= 1)
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                consumer.poll(50)
        finally:
            consumer.close(timeout_ms=0)
        assert len(requests_of(cluster, ApiKey.PUSH_TELEMETRY)) == 1
        assert len(requests_of(cluster, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)) == 1


def test_broker_without_the_apis_gets_nothing_and_nothing_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A broker that does not advertise the telemetry APIs (no receiver) is sent no telemetry
    request, nothing is logged above DEBUG, and client_instance_id answers None at once."""
    assert 71 not in DEFAULT_API_VERSIONS
    with (
        FakeCluster(topics={"t": 1}) as cluster,
        caplog.at_level(logging.DEBUG, logger="kafkaconsumer"),
    ):
        consumer = consumer_for(cluster)
        try:
            for _ in range(5):
                consumer.poll(50)
            started = time.monotonic()
            assert consumer.client_instance_id(5_000) is None
            assert time.monotonic() - started < 4
        finally:
            consumer.close()
        assert requests_of(cluster, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS) == []
        assert requests_of(cluster, ApiKey.PUSH_TELEMETRY) == []
    telemetry = [r for r in caplog.records if "telemetry" in r.name]
    assert telemetry and all(r.levelno <= logging.DEBUG for r in telemetry)


def test_disabled_push_sends_nothing_and_has_no_instance_id() -> None:
    """enable.metrics.push=false: no telemetry request, client_instance_id raises
    IllegalStateError."""
    with telemetry_cluster() as cluster:
        consumer = consumer_for(cluster, **{"enable.metrics.push": False})
        try:
            for _ in range(5):
                consumer.poll(50)
            with pytest.raises(IllegalStateError, match="enable.metrics.push"):
                consumer.client_instance_id(100)
            with pytest.raises(ValueError):
                consumer.client_instance_id(-1)
        finally:
            consumer.close()
        assert requests_of(cluster, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS) == []


def test_connection_cut_during_a_push_waits_the_default_interval() -> None:
    """A push whose connection breaks is retried after five minutes, not at once."""
    from tests.support.fake_broker import Reply

    with telemetry_cluster() as cluster:
        cluster.on(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
            lambda node, header, body: subscription_body(push_interval_ms=100),
        )
        cluster.on(ApiKey.PUSH_TELEMETRY, lambda node, header, body: Reply(close=True))
        consumer = consumer_for(cluster)
        telemetry = consumer._telemetry
        assert isinstance(telemetry, ClientTelemetryReporter)
        try:
            poll_until(consumer, lambda: telemetry.sender.interval_ms == DEFAULT_PUSH_INTERVAL_MS)
            assert telemetry.sender.enabled
            assert telemetry.sender.state is S.SUBSCRIPTION_NEEDED
        finally:
            consumer.close(timeout_ms=0)

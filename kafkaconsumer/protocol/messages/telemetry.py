"""Client telemetry APIs (KIP-714): a client asks a broker which of its metrics to push, and how
often, then pushes them.

GetTelemetrySubscriptions hands out the client instance id (the client sends the zero uuid
first) and the subscription: the metric-name prefixes wanted, the push interval, the compression
types the broker accepts (in its order of preference), the largest payload it takes and whether
sums are pushed as deltas. PushTelemetry carries the metrics, OTLP ``MetricsData`` encoded and
compressed with one of the accepted types.

Field facts follow the Apache Kafka message specs; names are the snake_case of the spec names.
"""

from __future__ import annotations

from kafkaconsumer.protocol.schema import Api, Field

__all__ = ["APIS", "GET_TELEMETRY_SUBSCRIPTIONS", "PUSH_TELEMETRY"]

#: GetTelemetrySubscriptions (key 71): the client's instance id and metrics subscription.
GET_TELEMETRY_SUBSCRIPTIONS = Api(
    71,
    "GetTelemetrySubscriptions",
    "0",
    "0+",
    request=[Field("client_instance_id", "uuid")],
    response=[
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("client_instance_id", "uuid"),
        Field("subscription_id", "int32"),
        Field("accepted_compression_types", "[]int8"),
        Field("push_interval_ms", "int32"),
        Field("telemetry_max_bytes", "int32"),
        Field("delta_temporality", "bool"),
        # Empty: nothing wanted; a single "*": everything; else metric-name prefixes.
        Field("requested_metrics", "[]string"),
    ],
)

#: PushTelemetry (key 72): one push of the subscribed metrics.
PUSH_TELEMETRY = Api(
    72,
    "PushTelemetry",
    "0",
    "0+",
    request=[
        Field("client_instance_id", "uuid"),
        Field("subscription_id", "int32"),
        # The last push of a closing client; the broker refuses any push after it.
        Field("terminating", "bool"),
        Field("compression_type", "int8"),
        Field("metrics", "bytes"),
    ],
    response=[
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
    ],
)

#: Every API defined here, for the registry in :mod:`kafkaconsumer.protocol.messages`.
APIS: list[Api] = [GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY]

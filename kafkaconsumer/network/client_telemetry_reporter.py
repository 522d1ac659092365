"""Client metrics pushed to the broker (KIP-714): Java's ``ClientTelemetryReporter`` and the
``TelemetrySender`` of its ``NetworkClient``.

A client made with ``enable.metrics.push=true`` (the default) owns one
:class:`ClientTelemetryReporter`. Its network client calls :meth:`~ClientTelemetryReporter.maybe_update`
at each poll, on whichever thread polls (the user's in ``poll()``, the heartbeat thread between
polls), outside the network lock: when a telemetry request is due it goes to the least loaded
broker (kept while it stays usable), and the poll wakes in time for the next one. The push
payload is built there too: the subscribed metrics of the client's registry as OTLP
``MetricsData``, compressed with the first type the broker accepts.

A broker without a telemetry receiver advertises neither API, so the first attempt turns
telemetry off without a word above DEBUG; a broker whose subscriptions name no metric of this
client is asked again each push interval and nothing is pushed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkaconsumer.errors import IllegalStateError, UnsupportedVersionError
from kafkaconsumer.metrics.metrics import Metrics
from kafkaconsumer.network.client_telemetry_sender import (
    DISABLED_INTERVAL_MS,
    ClientTelemetrySender,
    ClientTelemetrySubscription,
)
from kafkaconsumer.network.kafka_metrics_collector import (
    KafkaMetricsCollector,
    encode_metrics_data,
)
from kafkaconsumer.protocol.api import ApiKey
from kafkaconsumer.utils.clock import Time

if TYPE_CHECKING:
    from kafkaconsumer.network.consumer_client import ConsumerNetworkClient

logger = logging.getLogger(__name__)

__all__ = ["ClientTelemetryReporter", "resource_attributes"]

# Configuration keys whose values label a consumer's metrics (Java's ClientTelemetryProvider).
_RESOURCE_KEYS = (
    ("group.id", "group_id"),
    ("group.instance.id", "group_instance_id"),
    ("client.rack", "client_rack"),
)


def resource_attributes(config: Mapping[str, Any]) -> dict[str, str]:
    """The OTLP resource attributes of a consumer: its group, group instance id and rack,
    when set."""
    out: dict[str, str] = {}
    for key, label in _RESOURCE_KEYS:
        value = config.get(key)
        if value is not None and value != "":
            out[label] = str(value)
    return out


class ClientTelemetryReporter:
    """The telemetry of one client: the collector of its metrics, the subscription and push
    cycle, and the choice of broker.

    Thread-safety: :meth:`maybe_update` may run on two polling threads at once (the user's
    and the heartbeat thread): the sender's state lets only one of them make a request; the
    sender and the collector guard themselves. ``_node`` is a hint either may overwrite.
    """

    def __init__(
        self,
        metrics: Metrics,
        config: Mapping[str, Any],
        time: Time,
        *,
        request_timeout_ms: int,
        reconnect_backoff_ms: int,
    ) -> None:
        """Report the metrics of ``metrics``, labelled from ``config``; a request in flight
        counts ``request_timeout_ms``, a broker not ready yet is looked at again after
        ``reconnect_backoff_ms``."""
        self._time = time  # set once
        self._request_timeout_ms = request_timeout_ms  # set once
        self._reconnect_backoff_ms = max(1, reconnect_backoff_ms)  # set once
        self._resource = resource_attributes(config)  # set once
        self._collector = KafkaMetricsCollector(metrics, time)  # set once
        self.sender = ClientTelemetrySender(  # set once
            time, self._payload, on_temporality_change=self._collector.reset
        )
        self._node: int | None = None  # a hint (see the class): the broker telemetry goes to

    # ------------------------------------------------------------------ payload -------------
    def _payload(self, subscription: ClientTelemetrySubscription, codec: int) -> tuple[bytes, int]:
        selector = subscription.selector
        points = (
            self._collector.collect(selector, subscription.delta_temporality)
            if selector is not None
            else []
        )
        data = encode_metrics_data(points, self._resource)
        if codec == 0:
            return data, 0
        try:
            from kafkaconsumer.record.codecs import compress

            return compress(codec, data), codec
        except Exception:  # noqa: BLE001 - a codec missing or broken here: push uncompressed
            logger.info(
                "telemetry could not be compressed with type %s; pushing it uncompressed", codec
            )
            return data, 0

    # ------------------------------------------------------------------ driving -------------
    def maybe_update(self, client: ConsumerNetworkClient) -> int:
        """Send the due telemetry request, if any; milliseconds until this should run again.

        Called by ``client`` at each poll, outside its network lock. Telemetry never breaks a
        poll: an unexpected failure turns it off.
        """
        try:
            return self._maybe_update(client)
        except Exception:  # noqa: BLE001 - a telemetry bug must not break poll()
            logger.warning("client telemetry failed; it is off", exc_info=True)
            self.sender.close()
            return DISABLED_INTERVAL_MS

    def _maybe_update(self, client: ConsumerNetworkClient) -> int:
        sender = self.sender
        wait = sender.time_to_next_update(self._request_timeout_ms)
        if wait > 0:
            return wait
        node = self._node
        if node is None or not client.ready(node):
            self._node = node = client.least_loaded_node()
            if node is None:
                logger.debug("no broker to send telemetry to")
                return self._reconnect_backoff_ms
            if not client.ready(node):
                # ready() started connecting where it could; look again after a backoff.
                return self._reconnect_backoff_ms
        request = sender.create_request()
        if request is None:
            return max(1, sender.time_to_next_update(self._request_timeout_ms))
        api_key, body = request
        version = client.api_version(node, api_key)
        if version is None:
            # The broker has no telemetry receiver (or predates KIP-714): telemetry is off.
            sender.handle_failed_request(
                api_key,
                UnsupportedVersionError(f"node {node} does not support api {api_key}"),
                bool(body.get("terminating")),
            )
            return DISABLED_INTERVAL_MS
        terminating = bool(body.get("terminating"))
        future = client.send(node, api_key, body, version)
        if api_key == ApiKey.GET_TELEMETRY_SUBSCRIPTIONS:
            future.add_callback(sender.handle_subscriptions_response)
        else:
            future.add_callback(lambda resp: sender.handle_push_response(resp, terminating))
        future.add_errback(lambda exc: sender.handle_failed_request(api_key, exc, terminating))
        return self._request_timeout_ms

    # ------------------------------------------------------------------ public --------------
    def client_instance_id(
        self, client: ConsumerNetworkClient, timeout_ms: int
    ) -> uuid.UUID | None:
        """The client instance id, polling ``client`` up to ``timeout_ms`` for it (the caller
        is the thread allowed to poll); None when it did not come in time or telemetry is
        off."""
        deadline = self._time.monotonic_ms() + timeout_ms
        while True:
            found = self.sender.client_instance_id(0)
            if found is not None or not self.sender.enabled:
                return found
            remaining = deadline - self._time.monotonic_ms()
            if remaining <= 0:
                return None
            client.poll(min(remaining, 100), disable_wakeup=True)

    @classmethod
    def install(
        cls,
        client: ConsumerNetworkClient,
        metrics: Metrics,
        config: Mapping[str, Any],
        time: Time,
    ) -> ClientTelemetryReporter | None:
        """The reporter of a consumer whose ``enable.metrics.push`` is on, set as
        ``client.telemetry`` so that its polls drive it; None when push is off."""
        if not config["enable.metrics.push"]:
            return None
        reporter = cls(
            metrics,
            config,
            time,
            request_timeout_ms=int(config["request.timeout.ms"]),
            reconnect_backoff_ms=int(config["reconnect.backoff.ms"]),
        )
        client.telemetry = reporter
        return reporter

    @staticmethod
    def instance_id_of(
        reporter: ClientTelemetryReporter | None, client: ConsumerNetworkClient, timeout_ms: int
    ) -> uuid.UUID | None:
        """What a consumer's ``client_instance_id()`` returns: the id from ``reporter``, or
        ``IllegalStateError`` when the client pushes no metrics (``reporter`` None), as Java's
        clients raise."""
        if reporter is None:
            raise IllegalStateError(
                "Telemetry is not enabled. Set config `enable.metrics.push` to `true`."
            )
        return reporter.client_instance_id(client, timeout_ms)

    def close(self, client: ConsumerNetworkClient | None, timeout_ms: int) -> None:
        """Send the terminating push (when a subscription wants metrics) within
        ``timeout_ms``, polling ``client``, then stop."""
        try:
            if client is not None and timeout_ms > 0 and self.sender.initiate_close():
                deadline = self._time.monotonic_ms() + timeout_ms
                while self.sender.terminating_push_pending():
                    remaining = deadline - self._time.monotonic_ms()
                    if remaining <= 0:
                        logger.debug("the terminating telemetry push did not finish in time")
                        break
                    client.poll(min(remaining, 100), disable_wakeup=True)
        finally:
            self.sender.close()

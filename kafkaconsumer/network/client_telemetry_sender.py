"""The state machine that asks for a telemetry subscription and pushes metrics (KIP-714).

Java's ``ClientTelemetryState``, ``ClientTelemetryUtils`` and the ``ClientTelemetrySender`` of
``ClientTelemetryReporter``. The sender says when its next request is due
(:meth:`ClientTelemetrySender.time_to_next_update`), builds it (:meth:`~ClientTelemetrySender.create_request`)
and takes its outcome (``handle_*``); which broker it goes to, and when the network is polled,
are the caller's (:mod:`kafkaconsumer.network.client_telemetry_reporter`).

The cycle: GetTelemetrySubscriptions (the first with the zero uuid, answered with the client
instance id), then a PushTelemetry every push interval (the first at a random 50-150% of it, so
that clients started together spread out), compressed with the first type the broker accepts
that this client can write. A subscription that names no metric is asked again each interval
and nothing is pushed. Errors, as Java's client: UNKNOWN_SUBSCRIPTION_ID and
UNSUPPORTED_COMPRESSION_TYPE ask again at once; TELEMETRY_TOO_LARGE and
THROTTLING_QUOTA_EXCEEDED ask again after the push interval; INVALID_REQUEST, INVALID_RECORD,
UNSUPPORTED_VERSION and unknown codes turn telemetry off for the client's life; a request that
fails on the network waits five minutes when the failure is retriable, else turns telemetry off
(silently when the broker lacks the APIs). On close one last push says ``terminating``.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kafkaconsumer.errors import KafkaError, UnsupportedVersionError
from kafkaconsumer.protocol.api import ApiKey
from kafkaconsumer.utils.clock import Time

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PUSH_INTERVAL_MS",
    "DISABLED_INTERVAL_MS",
    "ClientTelemetryState",
    "ClientTelemetrySubscription",
    "ClientTelemetrySender",
    "error_interval_ms",
    "metric_selector",
    "preferred_compression_type",
]

#: The wait after a retriable network failure, and the push interval when a broker gives none.
DEFAULT_PUSH_INTERVAL_MS = 5 * 60 * 1000
#: The interval that means "never again": telemetry is off.
DISABLED_INTERVAL_MS = 2**31 - 1
#: Bounds of the random factor applied to the first push interval of a subscription.
_INITIAL_PUSH_JITTER = (0.5, 1.5)

# Error codes with a telemetry meaning (Kafka's Errors).
_UNSUPPORTED_VERSION = 35
_INVALID_REQUEST = 42
_UNSUPPORTED_COMPRESSION_TYPE = 76
_INVALID_RECORD = 87
_THROTTLING_QUOTA_EXCEEDED = 89
_UNKNOWN_SUBSCRIPTION_ID = 117
_TELEMETRY_TOO_LARGE = 118

#: Compression types this client can write, by Kafka id (gzip, snappy, lz4, zstd).
SUPPORTED_COMPRESSION_TYPES = frozenset({1, 2, 3, 4})


class ClientTelemetryState(enum.Enum):
    """Where the telemetry cycle is (Java ``ClientTelemetryState``).

    Thread-safety: immutable (enum members).
    """

    SUBSCRIPTION_NEEDED = "SUBSCRIPTION_NEEDED"
    SUBSCRIPTION_IN_PROGRESS = "SUBSCRIPTION_IN_PROGRESS"
    PUSH_NEEDED = "PUSH_NEEDED"
    PUSH_IN_PROGRESS = "PUSH_IN_PROGRESS"
    TERMINATING_PUSH_NEEDED = "TERMINATING_PUSH_NEEDED"
    TERMINATING_PUSH_IN_PROGRESS = "TERMINATING_PUSH_IN_PROGRESS"
    TERMINATED = "TERMINATED"

    def validate_transition(self, new: ClientTelemetryState) -> ClientTelemetryState:
        """``new`` when the cycle may go there from here; ValueError otherwise."""
        if new not in _NEXT_STATES[self]:
            allowed = ", ".join(s.value for s in _NEXT_STATES[self]) or "none"
            raise ValueError(
                f"invalid telemetry state transition from {self.value} to {new.value}; "
                f"allowed: {allowed}"
            )
        return new


_S = ClientTelemetryState
_NEXT_STATES: dict[ClientTelemetryState, frozenset[ClientTelemetryState]] = {
    _S.SUBSCRIPTION_NEEDED: frozenset({_S.SUBSCRIPTION_IN_PROGRESS, _S.TERMINATED}),
    _S.SUBSCRIPTION_IN_PROGRESS: frozenset(
        {_S.PUSH_NEEDED, _S.SUBSCRIPTION_NEEDED, _S.TERMINATING_PUSH_NEEDED, _S.TERMINATED}
    ),
    _S.PUSH_NEEDED: frozenset(
        {_S.PUSH_IN_PROGRESS, _S.SUBSCRIPTION_NEEDED, _S.TERMINATING_PUSH_NEEDED, _S.TERMINATED}
    ),
    _S.PUSH_IN_PROGRESS: frozenset(
        {_S.PUSH_NEEDED, _S.SUBSCRIPTION_NEEDED, _S.TERMINATING_PUSH_NEEDED, _S.TERMINATED}
    ),
    _S.TERMINATING_PUSH_NEEDED: frozenset({_S.TERMINATING_PUSH_IN_PROGRESS, _S.TERMINATED}),
    _S.TERMINATING_PUSH_IN_PROGRESS: frozenset({_S.TERMINATED}),
    _S.TERMINATED: frozenset(),
}
_TERMINATING = frozenset(
    {_S.TERMINATED, _S.TERMINATING_PUSH_NEEDED, _S.TERMINATING_PUSH_IN_PROGRESS}
)


def error_interval_ms(error_code: int, push_interval_ms: int) -> int | None:
    """How long to wait before asking for a subscription again after a response with
    ``error_code`` (None: no error; :data:`DISABLED_INTERVAL_MS`: never)."""
    if error_code == 0:
        return None
    if error_code in (_INVALID_REQUEST, _INVALID_RECORD, _UNSUPPORTED_VERSION):
        interval = DISABLED_INTERVAL_MS
    elif error_code in (_UNKNOWN_SUBSCRIPTION_ID, _UNSUPPORTED_COMPRESSION_TYPE):
        interval = 0
    elif error_code in (_TELEMETRY_TOO_LARGE, _THROTTLING_QUOTA_EXCEEDED):
        interval = push_interval_ms if push_interval_ms != -1 else DEFAULT_PUSH_INTERVAL_MS
    else:
        logger.error(
            "telemetry error code %s is not one the client knows: telemetry is off", error_code
        )
        interval = DISABLED_INTERVAL_MS
    logger.debug("telemetry error code %s: next request in %s ms", error_code, interval)
    return interval


def metric_selector(requested: Sequence[str] | None) -> Callable[[str], bool] | None:
    """A predicate over telemetry metric names from the subscription's requested metrics
    (prefixes; a single ``"*"`` is every metric); None when nothing is requested."""
    if not requested:
        return None
    if len(requested) == 1 and requested[0] == "*":
        return lambda name: True
    prefixes = tuple(requested)
    return lambda name: name.startswith(prefixes)


def preferred_compression_type(accepted: Sequence[int], unusable: frozenset[int] | set[int]) -> int:
    """The first accepted compression type (the broker lists them by preference) that this
    client can write; 0 (none) when there is none."""
    for codec in accepted:
        if codec in SUPPORTED_COMPRESSION_TYPES and codec not in unusable:
            return codec
    return 0


class ClientTelemetrySubscription:
    """What a broker asked for (Java ``ClientTelemetrySubscription``).

    Thread-safety: immutable after construction.
    """

    __slots__ = (
        "client_instance_id",
        "subscription_id",
        "push_interval_ms",
        "accepted_compression_types",
        "delta_temporality",
        "requested_metrics",
        "selector",
    )

    def __init__(
        self,
        client_instance_id: uuid.UUID,
        subscription_id: int,
        push_interval_ms: int,
        accepted_compression_types: Sequence[int],
        delta_temporality: bool,
        requested_metrics: Sequence[str],
    ) -> None:
        """Keep the subscription's fields; ``selector`` is derived from ``requested_metrics``."""
        self.client_instance_id = client_instance_id
        self.subscription_id = subscription_id
        self.push_interval_ms = push_interval_ms
        self.accepted_compression_types = tuple(accepted_compression_types)
        self.delta_temporality = delta_temporality
        self.requested_metrics = tuple(requested_metrics)
        self.selector = metric_selector(requested_metrics)

    def __repr__(self) -> str:
        return (
            f"ClientTelemetrySubscription(client_instance_id={self.client_instance_id}, "
            f"subscription_id={self.subscription_id}, push_interval_ms={self.push_interval_ms}, "
            f"accepted_compression_types={list(self.accepted_compression_types)}, "
            f"delta_temporality={self.delta_temporality}, "
            f"requested_metrics={list(self.requested_metrics)})"
        )


#: Builds a push's payload: (subscription, compression type) -> (metrics bytes, compression
#: type used). It raises when the payload cannot be built.
PayloadBuilder = Callable[[ClientTelemetrySubscription, int], tuple[bytes, int]]


class ClientTelemetrySender:
    """The telemetry cycle of one client.

    Thread-safety: every method may be called from any thread; ``_lock`` (a leaf) guards the
    state, and ``_cond`` over it wakes :meth:`client_instance_id` waiters. The payload is
    built outside it.
    """

    def __init__(
        self,
        time: Time,
        payload: PayloadBuilder,
        *,
        on_temporality_change: Callable[[], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        """A cycle that starts by asking for a subscription; ``payload`` builds each push."""
        self._time = time  # set once
        self._payload = payload  # set once
        self._on_temporality_change = on_temporality_change  # set once
        self._random = rng or random.Random()  # used under _lock
        # A leaf lock, taken with ``with self._lock`` (its __enter__ is C code): a Ctrl-C
        # landing inside a Python-level Condition.__enter__ could leave it held for good.
        # The Condition over it is only for wait() and notify_all().
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._state = ClientTelemetryState.SUBSCRIPTION_NEEDED  # guarded by _lock
        self._subscription: ClientTelemetrySubscription | None = None  # guarded by _lock
        # When the last request was answered (or failed), and how long after it the next is
        # due; 0 and 0 ask at once. Guarded by _lock.
        self._last_request_ms = 0
        self._interval_ms = 0
        self._enabled = True  # guarded by _lock
        # Compression types that failed to compress here: the next push uses another.
        self._unusable_compression: set[int] = set()  # guarded by _lock
        self._pushes = 0  # guarded by _lock
        self._terminating_done = False  # guarded by _lock: the last push was answered

    # ------------------------------------------------------------------ views ---------------
    @property
    def state(self) -> ClientTelemetryState:
        """The current state."""
        with self._lock:
            return self._state

    @property
    def enabled(self) -> bool:
        """False once telemetry is off for good (an unrecoverable error, or closed)."""
        with self._lock:
            return self._enabled

    @property
    def subscription(self) -> ClientTelemetrySubscription | None:
        """The last subscription received, if any."""
        with self._lock:
            return self._subscription

    @property
    def push_count(self) -> int:
        """How many pushes were answered without error (the terminating one included)."""
        with self._lock:
            return self._pushes

    @property
    def interval_ms(self) -> int:
        """The wait after the last request before the next."""
        with self._lock:
            return self._interval_ms

    # ------------------------------------------------------------------ timing --------------
    def time_to_next_update(self, request_timeout_ms: int) -> int:
        """Milliseconds until a request is due (0: now); a request in flight counts as
        ``request_timeout_ms``."""
        with self._lock:
            if not self._enabled:
                return DISABLED_INTERVAL_MS
            state = self._state
            if state in (_S.SUBSCRIPTION_IN_PROGRESS, _S.PUSH_IN_PROGRESS):
                return request_timeout_ms
            if state in (_S.TERMINATING_PUSH_IN_PROGRESS, _S.TERMINATED):
                return DISABLED_INTERVAL_MS
            if state is _S.TERMINATING_PUSH_NEEDED:
                return 0
            due = self._last_request_ms + self._interval_ms
        return max(0, due - self._time.monotonic_ms())

    # ------------------------------------------------------------------ requests ------------
    def create_request(self) -> tuple[int, dict[str, Any]] | None:
        """The due request as ``(api_key, body)``, moving to its in-progress state; None when
        there is nothing to send."""
        with self._lock:
            state = self._state
            subscription = self._subscription
            if state in (_S.SUBSCRIPTION_NEEDED, _S.PUSH_NEEDED) and (
                self._time.monotonic_ms() < self._last_request_ms + self._interval_ms
            ):
                # Another polling thread sent the request and had its answer meanwhile.
                return None
            if state is _S.SUBSCRIPTION_NEEDED:
                if not self._set_state(_S.SUBSCRIPTION_IN_PROGRESS):
                    return None
                instance = subscription.client_instance_id if subscription else uuid.UUID(int=0)
                logger.debug(
                    "asking for a telemetry subscription (client instance id %s)", instance
                )
                return ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, {"client_instance_id": instance}
            if state not in (_S.PUSH_NEEDED, _S.TERMINATING_PUSH_NEEDED):
                logger.debug("no telemetry request to make in state %s", state.value)
                return None
            if subscription is None:
                self._set_state(_S.SUBSCRIPTION_NEEDED)
                return None
            terminating = state is _S.TERMINATING_PUSH_NEEDED
            if not self._set_state(
                _S.TERMINATING_PUSH_IN_PROGRESS if terminating else _S.PUSH_IN_PROGRESS
            ):
                return None
            codec = preferred_compression_type(
                subscription.accepted_compression_types, self._unusable_compression
            )
        try:
            metrics, used = self._payload(subscription, codec)
        except Exception:  # noqa: BLE001 - a payload failure skips one push, as in Java
            logger.warning("the client telemetry payload could not be built", exc_info=True)
            with self._lock:
                self._update_error_result(subscription.push_interval_ms)
                if terminating:
                    self._terminating_done = True
                    self._cond.notify_all()
                else:
                    self._set_state(_S.PUSH_NEEDED)
            return None
        if used != codec:
            with self._lock:
                self._unusable_compression.add(codec)
        logger.debug(
            "pushing telemetry (client instance id %s, %d bytes, compression type %d%s)",
            subscription.client_instance_id,
            len(metrics),
            used,
            ", terminating" if terminating else "",
        )
        return ApiKey.PUSH_TELEMETRY, {
            "client_instance_id": subscription.client_instance_id,
            "subscription_id": subscription.subscription_id,
            "terminating": terminating,
            "compression_type": used,
            "metrics": metrics,
        }

    # ------------------------------------------------------------------ responses -----------
    def handle_subscriptions_response(self, body: Any) -> None:
        """Take a GetTelemetrySubscriptions response."""
        with self._lock:
            if self._state in _TERMINATING:
                return  # closing began while the request was out
            old = self._subscription
            interval = error_interval_ms(
                int(body["error_code"]), old.push_interval_ms if old is not None else -1
            )
            if interval is not None:
                if not self._set_state(_S.SUBSCRIPTION_NEEDED):
                    logger.debug("no transition after a failed subscription request")
                self._update_error_result(interval)
                return
            instance = body["client_instance_id"]
            if instance is None or instance.int == 0:
                # Java's validateClientInstanceId: a broker bug; drop telemetry for good.
                logger.warning("the broker gave no client instance id: telemetry is off")
                self._update_error_result(DISABLED_INTERVAL_MS)
                self._set_state(_S.SUBSCRIPTION_NEEDED)
                return
            push_interval = int(body["push_interval_ms"])
            if push_interval <= 0:
                logger.warning(
                    "the broker's telemetry push interval (%s) is invalid; using %s ms",
                    push_interval,
                    DEFAULT_PUSH_INTERVAL_MS,
                )
                push_interval = DEFAULT_PUSH_INTERVAL_MS
            subscription = ClientTelemetrySubscription(
                instance,
                int(body["subscription_id"]),
                push_interval,
                [int(c) for c in body["accepted_compression_types"] or ()],
                bool(body["delta_temporality"]),
                list(body["requested_metrics"] or ()),
            )
            temporality_changed = (
                old is not None and old.delta_temporality != subscription.delta_temporality
            )
            new = _S.SUBSCRIPTION_NEEDED if subscription.selector is None else _S.PUSH_NEEDED
            if not self._set_state(new):
                return
            self._subscription = subscription
            if new is _S.PUSH_NEEDED:
                low, high = _INITIAL_PUSH_JITTER
                self._interval_ms = round(self._random.uniform(low, high) * push_interval)
            else:
                self._interval_ms = push_interval
            self._last_request_ms = self._time.monotonic_ms()
            self._cond.notify_all()
            if new is _S.PUSH_NEEDED and (
                old is None or old.requested_metrics != subscription.requested_metrics
            ):
                logger.info(
                    "client telemetry subscribed: client instance id %s, metrics %s, every %d ms",
                    instance,
                    list(subscription.requested_metrics),
                    push_interval,
                )
            logger.debug(
                "telemetry subscription %r; next request in %d ms", subscription, self._interval_ms
            )
        if temporality_changed and self._on_temporality_change is not None:
            self._on_temporality_change()

    def handle_push_response(self, body: Any, terminating: bool = False) -> None:
        """Take a PushTelemetry response (of the terminating push when ``terminating``)."""
        with self._lock:
            if terminating:
                # The last push: answered, whatever the answer; nothing follows it.
                if not body["error_code"]:
                    self._pushes += 1
                self._terminating_done = True
                self._cond.notify_all()
                return
            if self._state in _TERMINATING:
                return  # a push from before close() began
            subscription = self._subscription
            push_interval = subscription.push_interval_ms if subscription else -1
            interval = error_interval_ms(int(body["error_code"]), push_interval)
            if interval is not None:
                self._set_state(_S.SUBSCRIPTION_NEEDED)
                self._update_error_result(interval)
                return
            self._pushes += 1
            self._last_request_ms = self._time.monotonic_ms()
            self._interval_ms = push_interval
            self._set_state(_S.PUSH_NEEDED)

    def handle_failed_request(
        self, api_key: int, error: BaseException, terminating: bool = False
    ) -> None:
        """A telemetry request (the terminating push when ``terminating``) failed before a
        response: wait five minutes when the failure is retriable, else turn telemetry off
        (quietly when the broker lacks the API)."""
        logger.debug("telemetry request %s failed: %r", api_key, error)
        with self._lock:
            if terminating:
                self._terminating_done = True
                self._cond.notify_all()
                return
            if self._state in _TERMINATING:
                return
            if self._state not in (_S.SUBSCRIPTION_IN_PROGRESS, _S.PUSH_IN_PROGRESS):
                logger.debug("telemetry failure in state %s: telemetry is off", self._state.value)
                self._update_error_result(DISABLED_INTERVAL_MS)
                return
            cause = error.__cause__
            retriable = (isinstance(error, KafkaError) and error.retriable) or (
                isinstance(cause, KafkaError) and cause.retriable
            )
            if retriable:
                self._update_error_result(DEFAULT_PUSH_INTERVAL_MS)
            else:
                if not isinstance(error, UnsupportedVersionError):
                    logger.warning("client telemetry failed for good, it is off: %s", error)
                self._update_error_result(DISABLED_INTERVAL_MS)
            self._set_state(_S.SUBSCRIPTION_NEEDED)

    # ------------------------------------------------------------------ instance id ---------
    def client_instance_id(self, timeout_ms: float) -> uuid.UUID | None:
        """The client instance id, waiting up to ``timeout_ms`` for a first subscription;
        None when none came in time."""
        if timeout_ms < 0:
            raise ValueError("the timeout cannot be negative")
        deadline = self._time.monotonic_ms() + timeout_ms
        with self._lock:
            while self._subscription is None and self._enabled:
                remaining = deadline - self._time.monotonic_ms()
                if remaining <= 0:
                    break
                # Waits in slices so that Ctrl-C gets through.
                self._cond.wait(min(remaining, 500) / 1000.0)
            subscription = self._subscription
        return subscription.client_instance_id if subscription is not None else None

    # ------------------------------------------------------------------ close ---------------
    def initiate_close(self) -> bool:
        """Ask for a terminating push when a subscription that wants metrics is loaded; True
        when one is due."""
        with self._lock:
            if self._subscription is None or self._state is _S.SUBSCRIPTION_NEEDED:
                logger.debug("telemetry subscription not loaded: no terminating push")
                return False
            if not self._enabled or self._state in _TERMINATING:
                return False
            if self._subscription.selector is None:
                return False  # the broker wants no metric: there is nothing to say
            return self._set_state(_S.TERMINATING_PUSH_NEEDED)

    def terminating_push_pending(self) -> bool:
        """True while the terminating push is due or awaits its response."""
        with self._lock:
            state = self._state
            return state is _S.TERMINATING_PUSH_NEEDED or (
                state is _S.TERMINATING_PUSH_IN_PROGRESS and not self._terminating_done
            )

    def wait_terminating_push(self, timeout_ms: float) -> bool:
        """Wait up to ``timeout_ms`` for the terminating push to be answered; True if it was."""
        deadline = self._time.monotonic_ms() + timeout_ms
        with self._lock:
            while self._state is _S.TERMINATING_PUSH_IN_PROGRESS and not self._terminating_done:
                remaining = deadline - self._time.monotonic_ms()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 500) / 1000.0)
            return True

    def close(self) -> None:
        """End the cycle: nothing more is sent."""
        with self._lock:
            if self._state is not _S.TERMINATED:
                self._set_state(_S.TERMINATED)
            self._enabled = False
            self._cond.notify_all()

    # ------------------------------------------------------------------ helpers -------------
    def _set_state(self, new: ClientTelemetryState) -> bool:
        # Under _lock.
        try:
            old, self._state = self._state, self._state.validate_transition(new)
        except ValueError:
            logger.debug(
                "telemetry state %s cannot go to %s: telemetry is off", self._state.value, new.value
            )
            self._enabled = False
            self._cond.notify_all()
            return False
        logger.debug("telemetry state %s -> %s", old.value, new.value)
        return True

    def _update_error_result(self, interval_ms: int) -> None:
        # Under _lock.
        self._interval_ms = interval_ms
        self._last_request_ms = self._time.monotonic_ms()
        if interval_ms == DISABLED_INTERVAL_MS:
            self._enabled = False
            self._cond.notify_all()

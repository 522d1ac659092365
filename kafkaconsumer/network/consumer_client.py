"""The thread-safe network object of a consumer (Java: ``ConsumerNetworkClient``).

:class:`ConsumerNetworkClient` wraps the single-threaded
:class:`~kafkaconsumer.network.client.NetworkClient` with one lock. Any thread may
:meth:`~ConsumerNetworkClient.send` (the request is queued and the poll thread woken) and any
thread may :meth:`~ConsumerNetworkClient.poll`. Request futures complete inside the network poll
but their callbacks are queued and run only after the lock is released, so a slow callback never
holds up the heartbeat thread. :meth:`~ConsumerNetworkClient.wakeup` makes the thread blocked in
``poll`` raise :class:`~kafkaconsumer.errors.WakeupError`; the heartbeat thread polls with
wake-ups disabled (:meth:`~ConsumerNetworkClient.poll_no_wakeup`). With
:meth:`~ConsumerNetworkClient.start_background_receive`, a
:class:`~kafkaconsumer.network.consumer_network_thread.ConsumerNetworkThread` polls too while a
fetch is in flight and no other thread needs the client, yielding to any that does.
Inside :meth:`~ConsumerNetworkClient.between_waits`, the polls of one thread first run a step
of its own (the consumer keeps its fetch state moving while a blocking call waits).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from kafkaconsumer.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    RebootstrapRequiredError,
    WakeupError,
)
from kafkaconsumer.metadata import Metadata
from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_network_thread import ConsumerNetworkThread
from kafkaconsumer.network.future import Future

logger = logging.getLogger(__name__)

__all__ = ["ConsumerNetworkClient"]

#: The longest single wait inside poll, so that timers and other threads get a look in.
_MAX_POLL_SLICE_MS = 5000
#: How long close() waits for the background receiver to end.
_THREAD_JOIN_S = 0.5


class TelemetryDriver(Protocol):
    """What a poll drives besides the network: client telemetry (see
    :mod:`kafkaconsumer.network.client_telemetry_reporter`).

    Thread-safety: called by whichever thread polls, outside the network lock; an
    implementation guards its own state.
    """

    def maybe_update(self, client: ConsumerNetworkClient) -> int:
        """Send what is due; milliseconds until it should run again."""


class _Unsent:
    """A request waiting for its node to become ready.

    Thread-safety: guarded by the owner.
    """

    __slots__ = (
        "node_id",
        "api_key",
        "body",
        "version",
        "future",
        "created_ms",
        "timeout_ms",
        "expect_response",
    )

    def __init__(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None,
        future: Future[Any],
        created_ms: int,
        timeout_ms: int,
        expect_response: bool,
    ) -> None:
        # Set once here; the request then sits in ConsumerNetworkClient._unsent (guarded by
        # _unsent_lock) until the thread holding the network lock sends or fails it.
        self.node_id = node_id
        self.api_key = api_key
        self.body = body
        self.version = version
        self.future = future
        self.created_ms = created_ms
        self.timeout_ms = timeout_ms
        self.expect_response = expect_response


class ConsumerNetworkClient:
    """Thread-safe request/response access to the brokers for one consumer.

    Thread-safety: thread-safe. One lock guards the NetworkClient (held while it polls); the
    queue of unsent requests has its own small lock so :meth:`send` never waits for a poll in
    progress. Future callbacks run after the lock is released, on the polling thread.
    """

    def __init__(
        self,
        client: NetworkClient,
        metadata: Metadata | None = None,
        *,
        request_timeout_ms: int | None = None,
        retry_backoff_ms: int | None = None,
    ) -> None:
        """Wrap ``client`` (and its ``metadata``); the timeouts default to the client's
        ``request.timeout.ms`` and ``retry.backoff.ms``.
        """
        # The NetworkClient is not thread-safe: every call on it is made under _lock (the
        # network lock).
        self.client = client
        if metadata is not None and client.metadata is not metadata:
            client.metadata = metadata
        self.metadata: Metadata | None = client.metadata  # set once; guards itself (_lock)
        self.request_timeout_ms = int(
            request_timeout_ms
            if request_timeout_ms is not None
            else client.settings.request_timeout_ms
        )
        self.retry_backoff_ms = int(
            retry_backoff_ms if retry_backoff_ms is not None else client.settings.retry_backoff_ms
        )
        #: The network lock: guards ``client`` and _closed; held while the client polls.
        self._lock = threading.RLock()
        #: A leaf guarding _unsent, so that send() never waits for a poll in progress.
        self._unsent_lock = threading.Lock()
        self._unsent: dict[int, collections.deque[_Unsent]] = {}  # guarded by _unsent_lock
        # Completions to run once the network lock is let go, and disconnects asked for by
        # disconnect_async: lock-free deques (append and popleft are atomic), appended by any
        # thread, drained by the thread that polls.
        self._pending_completion: collections.deque[
            tuple[Future[Any], Any, BaseException | None]
        ] = collections.deque()
        self._pending_disconnects: collections.deque[int] = collections.deque()
        # Guarded by _flag_lock: set by wakeup() from any thread, cleared by the poll it wakes.
        self._wakeup_requested = False
        # Guarded by _flag_lock: set once by close(), never cleared.
        self._wakeups_disabled = False
        self._flag_lock = threading.Lock()
        # Threads about to take or waiting for the network lock, and the one holding it: hints
        # read without a lock (set operations are atomic), see _locked.
        self._waiting: set[int] = set()  # lock-free hint (see above)
        self._holder = 0  # written by the thread taking or letting go of _lock; a hint
        self._closed = False  # guarded by _lock (the network lock)
        #: Client telemetry (KIP-714), driven by every poll outside the network lock; set once
        #: by the client that owns this object, right after making it.
        self.telemetry: TelemetryDriver | None = None
        # The background receiver, set once by start_background_receive (user's thread,
        # before any fetch is sent).
        self._network_thread: ConsumerNetworkThread | None = None
        # Whether it receives now (see set_background_receive); written by the user's thread,
        # read lock-free by the receiver as a hint.
        self._background_on = True
        # The step of between_waits and the thread it belongs to; written (and the flag that
        # keeps the step from re-entering itself, read and written) by that thread only.
        self._wait_step: tuple[int, Callable[[], float | None]] | None = None
        self._in_wait_step = False

    # ------------------------------------------------------------------ locking -------------
    @contextlib.contextmanager
    def _locked(self, announce: bool = True) -> Iterator[None]:
        """Take the network lock; when another thread holds it (maybe blocked in a poll), wake
        that thread so it lets go soon (otherwise the heartbeat thread could wait out a whole
        blocking poll). The background receiver takes it with ``announce=False``: it waits its
        turn without waking the holder, and nobody waits for it (see _let_waiters_in).

        The lock is taken by a ``with`` statement on the ``RLock`` itself, never by a call
        followed by ``try``: a KeyboardInterrupt that lands between an ``acquire()`` and the
        ``try`` would leave the lock held for good, and the heartbeat thread (holding the
        coordinator lock) waiting on it forever, so that ``close()`` never returns. The
        bookkeeping around it may go stale after such an interrupt, which costs at most a
        spurious wake-up.
        """
        me = threading.get_ident()
        if announce:
            # Announce first, then look: either the holder sees us before it blocks in select,
            # or we see it and wake it (see _poll_once).
            self._waiting.add(me)
            holder = self._holder
            if holder and holder != me:
                self.client.wakeup()
        with self._lock:
            self._waiting.discard(me)
            outer = self._holder
            self._holder = me
            try:
                yield
            finally:
                self._holder = me if outer == me else 0

    def _others_waiting(self) -> bool:
        waiting = self._waiting
        return bool(waiting) and (len(waiting) > 1 or threading.get_ident() not in waiting)

    def _let_waiters_in(self) -> None:
        # Python locks are not fair: a polling loop could take the lock again before a waiting
        # thread runs. Give waiters a short, bounded chance first.
        deadline = time.monotonic() + 0.01
        while self._others_waiting() and time.monotonic() < deadline:
            time.sleep(0.0002)

    # ------------------------------------------------------------------ sending -------------
    def send(
        self,
        node_id: int,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
        expect_response: bool = True,
    ) -> Future[Any]:
        """Queue a request for ``node_id`` and return its future; never blocks.

        The request is sent by the next poll once the node is ready. It fails with
        :class:`KafkaTimeoutError` when it could not be sent and answered within ``timeout_ms``
        (default ``request.timeout.ms``), with the connection's error when the connection
        breaks, and with the authentication error when connecting fails to authenticate.
        """
        if self._closed:
            return Future().failure(KafkaConnectionError("the consumer network client is closed"))
        future: Future[Any] = Future()
        timeout = self.request_timeout_ms if timeout_ms is None else int(timeout_ms)
        unsent = _Unsent(
            node_id,
            int(api_key),
            body,
            version,
            future,
            self.client.now_ms(),
            timeout,
            expect_response,
        )
        with self._unsent_lock:
            self._unsent.setdefault(node_id, collections.deque()).append(unsent)
        self.client.wakeup()
        thread = self._network_thread
        if thread is not None:
            thread.kick()
        return future

    def _complete(self, target: Future[Any], value: Any, exc: BaseException | None) -> None:
        self._pending_completion.append((target, value, exc))

    def _fire_pending_completions(self) -> int:
        fired = 0
        while True:
            try:
                target, value, exc = self._pending_completion.popleft()
            except IndexError:
                return fired
            fired += 1
            if target.is_done:
                continue
            if exc is not None:
                target.failure(exc)
            else:
                target.success(value)

    def _try_send(self, now_ms: int) -> None:
        with self._unsent_lock:
            nodes = [n for n, q in self._unsent.items() if q]
        for node_id in nodes:
            # A node without a known address is a failed connect attempt (NetworkClient's
            # initiate_connect): _check_disconnects fails its requests after this poll.
            if not self.client.ready(node_id, now_ms):
                continue
            while True:
                with self._unsent_lock:
                    queue = self._unsent.get(node_id)
                    if not queue or not self.client.is_ready(node_id, now_ms):
                        break
                    req = queue.popleft()
                remaining = max(1, req.timeout_ms - (now_ms - req.created_ms))
                try:
                    inner = self.client.send(
                        node_id,
                        req.api_key,
                        req.body,
                        req.version,
                        timeout_ms=remaining,
                        expect_response=req.expect_response,
                    )
                except Exception as exc:  # noqa: BLE001 - any bug in one body fails only it
                    # NetworkClient.send turns encoding errors into a failed future already;
                    # this catches anything else a malformed body raises, because an exception
                    # here would lose the popped request and break poll() for every thread.
                    logger.error(
                        "request %s to node %s could not be sent: %r", req.api_key, node_id, exc
                    )
                    inner = Future().failure(exc)
                target = req.future
                inner.add_callback(lambda v, t=target: self._complete(t, v, None))
                inner.add_errback(lambda e, t=target: self._complete(t, None, e))

    def _fail_node_requests(self, node_id: int, error: KafkaError) -> None:
        with self._unsent_lock:
            queue = self._unsent.get(node_id)
            failed = list(queue) if queue else []
            if queue:
                queue.clear()
        for req in failed:
            self._complete(req.future, None, error)

    def _check_disconnects(self) -> None:
        # Requests queued for a node whose connection attempt just failed fail now instead of
        # waiting out their timeout (Java's checkDisconnects).
        failed: list[tuple[_Unsent, KafkaError]] = []
        with self._unsent_lock:
            for node_id, queue in self._unsent.items():
                if queue and self.client.connection_failed(node_id):
                    err: KafkaError | None = self.client.authentication_error(node_id)
                    if err is None:
                        err = self.client.last_error(node_id)
                        if isinstance(err, RebootstrapRequiredError):
                            # The client starts again from bootstrap.servers: for the request
                            # this is a lost connection, retried once the new metadata is in
                            # (Java fails it with a DisconnectException).
                            err = KafkaConnectionError(
                                f"connection to node {node_id} failed: {err}"
                            )
                    if err is None:
                        err = KafkaConnectionError(f"connection to node {node_id} failed")
                    while queue:
                        failed.append((queue.popleft(), err))
        for req, err in failed:
            self._complete(req.future, None, err)

    def _fail_expired(self, now_ms: int) -> None:
        expired: list[_Unsent] = []
        with self._unsent_lock:
            for queue in self._unsent.values():
                keep = [r for r in queue if now_ms - r.created_ms < r.timeout_ms]
                if len(keep) != len(queue):
                    expired.extend(r for r in queue if now_ms - r.created_ms >= r.timeout_ms)
                    queue.clear()
                    queue.extend(keep)
        for req in expired:
            self._complete(
                req.future,
                None,
                KafkaTimeoutError(
                    f"request to node {req.node_id} could not be sent within {req.timeout_ms} ms "
                    "(node not ready)"
                ),
            )

    def _handle_pending_disconnects(self) -> None:
        while self._pending_disconnects:
            node_id = self._pending_disconnects.popleft()
            self._fail_node_requests(
                node_id, KafkaConnectionError(f"disconnected from node {node_id}")
            )
            self.client.disconnect(node_id)

    def _next_unsent_deadline(self, now_ms: int) -> int | None:
        with self._unsent_lock:
            deadlines = [r.created_ms + r.timeout_ms for q in self._unsent.values() for r in q]
        return min(deadlines) - now_ms if deadlines else None

    def _unsent_wait(self, now_ms: int) -> int | None:
        with self._unsent_lock:
            nodes = [n for n, q in self._unsent.items() if q]
        waits = [w for w in (self.client.send_delay(n, now_ms) for n in nodes) if w is not None]
        return min(waits) if waits else None

    # ------------------------------------------------------------------ polling -------------
    def poll(
        self,
        timeout_ms: float | None = None,
        future: Future[Any] | None = None,
        *,
        disable_wakeup: bool = False,
    ) -> bool:
        """Do network I/O for up to ``timeout_ms``, or until ``future`` completes.

        With a ``future``, polls repeatedly until it is done or the timeout passes (``None``:
        until it is done; every request fails by its own timeout, so this is bounded). Without
        one, polls once, blocking at most ``timeout_ms`` (``None``: ``request.timeout.ms``).
        Either way at least one round of I/O happens: ``timeout_ms=0`` means "do not block",
        not "do nothing", so queued requests go out and ready responses are read (Java's
        ``poll(Timer)`` with an expired timer). Returns True when ``future`` is done (always
        True without a future).

        Raises :class:`WakeupError` when :meth:`wakeup` was called (unless ``disable_wakeup``),
        and a fatal metadata error (authentication/authorization) when one occurred.
        """
        if timeout_ms is not None and timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms}")
        start = self.client.now_ms()
        if future is None:
            budget = float(self.request_timeout_ms if timeout_ms is None else timeout_ms)
            self._poll_once(budget, None, disable_wakeup)
            return True
        # A do-while, as Java's: the first round runs even with no time left, so that a caller
        # polling with timeout 0 still sends its request and collects a ready response.
        while True:
            if timeout_ms is None:
                remaining = float(_MAX_POLL_SLICE_MS)
            else:
                remaining = max(0.0, float(timeout_ms) - (self.client.now_ms() - start))
            self._poll_once(remaining, future, disable_wakeup)
            if future.is_done:
                return True
            if timeout_ms is not None and self.client.now_ms() - start >= timeout_ms:
                return False

    def _poll_once(
        self,
        timeout_ms: float,
        future: Future[Any] | None,
        disable_wakeup: bool,
        background: bool = False,
    ) -> None:
        self._fire_pending_completions()
        telemetry_wait = None
        if self.telemetry is not None and not self._closed:
            telemetry_wait = self.telemetry.maybe_update(self)
        step_wait = None
        if not (background or disable_wakeup):
            step_wait = self._run_wait_step()
        if self._waiting:
            self._let_waiters_in()
        try:
            with self._locked(announce=not background):
                if self._closed:
                    raise KafkaConnectionError("the consumer network client is closed")
                now = self.client.now_ms()
                self._handle_pending_disconnects()
                self._try_send(now)
                if future is None or not future.is_done and not self._pending_completion:
                    wait = min(timeout_ms, float(_MAX_POLL_SLICE_MS))
                    unsent_deadline = self._next_unsent_deadline(now)
                    if unsent_deadline is not None:
                        wait = min(wait, float(max(0, unsent_deadline)))
                    unsent_wait = self._unsent_wait(now)
                    if unsent_wait is not None:
                        # A queued request waits for a backoff or a throttle to end.
                        wait = min(wait, float(max(1, unsent_wait)))
                    if telemetry_wait is not None:
                        wait = min(wait, float(telemetry_wait))
                    if step_wait is not None:
                        wait = min(wait, step_wait)
                    if self._pending_completion or self._others_waiting():
                        wait = 0.0
                    elif not disable_wakeup and self._wakeup_requested:
                        # A wakeup() whose byte another thread's poll drained (a hint: one
                        # arriving later writes a new byte).
                        wait = 0.0
                    self.client.poll(max(0.0, wait))
                else:
                    self.client.poll(0)
                now = self.client.now_ms()
                self._check_disconnects()
                if not disable_wakeup:
                    self._maybe_trigger_wakeup()
                self._try_send(now)
                self._fail_expired(now)
        finally:
            fired = self._fire_pending_completions()
        holder = self._holder
        if fired and (background or holder not in (0, threading.get_ident())):
            # What this poll completed (a fetch response buffered, a future done) may be what
            # a thread that took the lock meanwhile waits for: it looked before the completion
            # was done (once taken from the queue, it no longer cuts that thread's wait short),
            # so its wait must end at once.
            self.client.wakeup()
        if background:
            # A fatal metadata error is for poll() to raise, not for this thread.
            return
        if self.metadata is not None:
            self.metadata.maybe_throw_any_exception()

    @contextlib.contextmanager
    def between_waits(self, step: Callable[[], float | None]) -> Iterator[None]:
        """While the calling thread is inside this context, each of its polls first runs
        ``step`` (outside the network lock), which returns the longest that poll may then
        block (None: no bound of its own).

        A blocking call uses it to go on with work of its own between rounds of I/O while it
        waits for an answer: what ``step`` queues goes out in the same round, and every answer
        that arrives wakes the wait, so the step runs again at once. The heartbeat thread, the
        background receiver and polls that ignore :meth:`wakeup` never run it, and ``step`` is
        never re-entered (a poll it makes runs without it).
        """
        me = threading.get_ident()
        outer = self._wait_step
        self._wait_step = (me, step)
        try:
            yield
        finally:
            self._wait_step = outer

    def _run_wait_step(self) -> float | None:
        installed = self._wait_step
        if installed is None or installed[0] != threading.get_ident() or self._in_wait_step:
            return None
        self._in_wait_step = True
        try:
            bound = installed[1]()
        finally:
            self._in_wait_step = False
        return None if bound is None else max(0.0, float(bound))

    def poll_no_wakeup(self) -> None:
        """One non-blocking poll that ignores :meth:`wakeup` (for the heartbeat thread)."""
        self.poll(0, disable_wakeup=True)

    def poll_background(self, timeout_ms: float) -> None:
        """One poll of the background receiver, waiting up to ``timeout_ms``.

        It ignores :meth:`wakeup`, leaves fatal metadata errors for the next :meth:`poll`,
        wakes nobody to get the lock (it waits its turn, and lets announced waiters in first)
        and is woken by any thread that wants the lock. Raises
        :class:`~kafkaconsumer.errors.KafkaConnectionError` once closed.
        """
        self._poll_once(timeout_ms, None, True, background=True)

    def start_background_receive(self, has_work: Callable[[], bool], name: str) -> None:
        """Start a :class:`ConsumerNetworkThread` that polls while ``has_work()`` (a cheap,
        lock-free hint, true from before a request is sent until its answer is handled) and
        no other thread is in the client; stopped by :meth:`close`. Call once, before sending.
        """
        if self._network_thread is None:
            thread = ConsumerNetworkThread(self, has_work, name)
            thread.start()
            self._network_thread = thread

    def on_network_thread(self) -> bool:
        """True when called on the background receiver's thread."""
        thread = self._network_thread
        return thread is not None and threading.current_thread() is thread

    def responses_on_reading_threads(self) -> bool:
        """True when responses arrive through reading threads (see
        :meth:`NetworkClient.responses_on_reading_threads`); a lock-free hint."""
        return self.client.responses_on_reading_threads()

    def only_receiving(self) -> bool:
        """True when a non-blocking poll would only find responses still being received by
        their reading threads (see :meth:`NetworkClient.only_receiving`): nothing is queued
        to send and no completion waits to run. A hint read without the network lock."""
        return (
            not any(tuple(self._unsent.values()))
            and not self._pending_completion
            and not self._pending_disconnects
            and self.client.only_receiving()
        )

    @property
    def receives_in_background(self) -> bool:
        """True when a background receiver polls (see :meth:`start_background_receive` and
        :meth:`set_background_receive`): a request sent needs no poll of the sender's own to
        go out."""
        return self._network_thread is not None and self._background_on

    def set_background_receive(self, on: bool) -> None:
        """Let the background receiver poll (``on``) or keep it asleep, the thread that polls
        then receiving its own responses. Called by the user's thread; a receiver in the
        middle of a poll finishes it."""
        if on != self._background_on:
            self._background_on = on
            thread = self._network_thread
            if on and thread is not None:
                thread.kick()

    def background_wanted(self) -> bool:
        """Whether the background receiver is to poll now (a lock-free hint it reads)."""
        return self._background_on

    def _maybe_trigger_wakeup(self) -> None:
        with self._flag_lock:
            if self._wakeups_disabled or not self._wakeup_requested:
                return
            self._wakeup_requested = False
        raise WakeupError("the blocking call was woken up by wakeup()")

    def wakeup(self) -> None:
        """Make the thread blocked in :meth:`poll` (or the next poll) raise WakeupError.

        Thread-safe; meant to be called from another thread.
        """
        with self._flag_lock:
            self._wakeup_requested = True
        self.client.wakeup()

    def disable_wakeups(self) -> None:
        """Stop :meth:`poll` from raising WakeupError from now on (close, as Java's)."""
        with self._flag_lock:
            self._wakeups_disabled = True

    # ------------------------------------------------------------------ helpers -------------
    def await_metadata_update(self, timeout_ms: float) -> bool:
        """Request a metadata refresh and poll until it lands.

        Raises :class:`KafkaTimeoutError` when it does not land within ``timeout_ms``, and the
        fatal error (authentication, authorization) when the refresh hit one.
        """
        if self.metadata is None:
            raise KafkaError("no metadata attached to this network client")
        version = self.metadata.request_update()
        start = self.client.now_ms()
        while self.metadata.update_version <= version:
            remaining = float(timeout_ms) - (self.client.now_ms() - start)
            if remaining <= 0:
                last = self.metadata.last_error
                note = str(last) if last is not None else self.client.connection_errors()
                raise KafkaTimeoutError(
                    f"metadata not updated within {timeout_ms} ms"
                    + (f" (last error: {note})" if note else "")
                )
            self.poll(remaining)
        return True

    def await_ready(self, node_id: int, timeout_ms: float) -> bool:
        """Poll until ``node_id`` is ready or the timeout passes; True when ready."""
        start = self.client.now_ms()
        while True:
            with self._locked():
                if self.client.ready(node_id):
                    return True
                err = self.client.authentication_error(node_id)
            if err is not None and self.client.connection_failed(node_id):
                raise err
            remaining = float(timeout_ms) - (self.client.now_ms() - start)
            if remaining <= 0:
                return False
            self.poll(min(remaining, float(max(1, self.client.connection_delay(node_id)))))

    def least_loaded_node(self) -> int | None:
        """The best node to send a request that any broker can answer."""
        with self._locked():
            return self.client.least_loaded_node()

    def is_unavailable(self, node_id: int) -> bool:
        """True when the node's last connect failed and it is still backing off."""
        with self._locked():
            return (
                self.client.connection_failed(node_id) and self.client.connection_delay(node_id) > 0
            )

    def ready(self, node_id: int) -> bool:
        """True when ``node_id`` can take a request now (its API versions known); otherwise
        start connecting when allowed. False once closed."""
        with self._locked():
            return not self._closed and self.client.ready(node_id)

    def try_connect(self, node_id: int) -> None:
        """Start connecting to ``node_id`` when it is not connected and not backing off
        (nothing once closed)."""
        with self._locked():
            if not self._closed:
                self.client.ready(node_id)

    def connection_failed(self, node_id: int) -> bool:
        """True when the node's last connection attempt failed."""
        with self._locked():
            return self.client.connection_failed(node_id)

    def disconnect_async(self, node_id: int) -> None:
        """Close the connection to ``node_id`` on the next poll (failing its requests)."""
        self._pending_disconnects.append(node_id)
        self.client.wakeup()

    def pending_request_count(self, node_id: int | None = None) -> int:
        """Requests unsent or in flight (for one node or in total)."""
        with self._unsent_lock:
            if node_id is None:
                unsent = sum(len(q) for q in self._unsent.values())
            else:
                unsent = len(self._unsent.get(node_id) or ())
        with self._locked():
            return unsent + self.client.in_flight_request_count(node_id)

    def has_pending(self, node_id: int, api_key: int) -> bool:
        """True when a request of ``api_key`` to the node is unsent or in flight."""
        key = int(api_key)
        with self._unsent_lock:
            if any(u.api_key == key for u in self._unsent.get(node_id) or ()):
                return True
        with self._locked():
            return self.client.has_in_flight(node_id, key)

    def has_pending_requests(self, node_id: int | None = None) -> bool:
        """True when a request (to the node) is unsent or in flight."""
        return self.pending_request_count(node_id) > 0

    def api_version(self, node_id: int, api_key: int) -> int | None:
        """The negotiated version of ``api_key`` with the node (None when unknown)."""
        with self._locked():
            return self.client.api_version(node_id, api_key)

    def execute(self, fn: Callable[[NetworkClient], Any]) -> Any:
        """Run ``fn(network_client)`` under the lock (for rare direct access)."""
        with self._locked():
            return fn(self.client)

    def close(self) -> None:
        """Fail every unsent request and close all connections, and stop the background
        receiver. Idempotent."""
        thread = self._network_thread
        if thread is not None:
            thread.close()
        with self._locked():
            if self._closed:
                return
            self._closed = True
            with self._unsent_lock:
                failed = [r for q in self._unsent.values() for r in q]
                self._unsent.clear()
            for req in failed:
                self._complete(
                    req.future, None, KafkaConnectionError("the consumer network client was closed")
                )
            self.client.close()
        self._fire_pending_completions()
        if thread is not None:
            # It ends at its next step (its poll raises once closed); waited for briefly so
            # that close() leaves no thread behind in the common case.
            thread.close(_THREAD_JOIN_S)

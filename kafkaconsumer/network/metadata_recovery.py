"""When the network client goes back to ``bootstrap.servers`` (Java: ``MetadataRecoveryStrategy``
and the rebootstrap part of ``NetworkClient.DefaultMetadataUpdater``, KIP-899, KIP-1102 and
KIP-1242).

With ``metadata.recovery.strategy=rebootstrap`` the client forgets the brokers of its cluster
metadata and starts again from ``bootstrap.servers`` when:

- a metadata refresh is due and every known broker is disconnected and backing off, with no
  connection ready (checked by the network client when it picks a node for the refresh);
- a refresh has been due for ``metadata.recovery.rebootstrap.trigger.ms`` without a Metadata
  response (:meth:`MetadataRecovery.needs_rebootstrap`);
- a broker answers REBOOTSTRAP_REQUIRED: at the top of a Metadata v13+ response, or to the
  ApiVersions v5+ request of a connection whose expected cluster id and node id
  (:meth:`MetadataRecovery.expected_cluster`, ``metadata.cluster.check.enable``) it does not
  match.

With ``none`` nothing of this happens: the client keeps trying the brokers it knows.
"""

from __future__ import annotations

from kafkaconsumer.metadata import Cluster

__all__ = ["MetadataRecovery", "REBOOTSTRAP", "NONE"]

#: The values of ``metadata.recovery.strategy``.
NONE = "none"
REBOOTSTRAP = "rebootstrap"


class MetadataRecovery:
    """The rebootstrap settings of one network client and the timer of its metadata attempts.

    Thread-safety: not thread-safe; owned by the thread driving the network client (under the
    network lock behind a ConsumerNetworkClient).
    """

    def __init__(self, strategy: str, trigger_ms: int, cluster_check: bool) -> None:
        """``strategy``: ``none`` or ``rebootstrap``; ``trigger_ms``:
        ``metadata.recovery.rebootstrap.trigger.ms``; ``cluster_check``:
        ``metadata.cluster.check.enable``."""
        # Settings, set once here.
        self.enabled = strategy == REBOOTSTRAP
        self.trigger_ms = trigger_ms
        self.cluster_check = cluster_check
        # When the current run of metadata attempts began (the first refresh found due since
        # the last Metadata response, or the last rebootstrap); None while metadata is fresh.
        self._attempt_start_ms: int | None = None  # network lock
        # A broker asked for a rebootstrap in a Metadata response.
        self._requested = False  # network lock

    def on_update_due(self, now_ms: int) -> None:
        """A refresh is due and about to be tried: start the trigger timer if it is not
        running."""
        if self._attempt_start_ms is None:
            self._attempt_start_ms = now_ms

    def on_metadata(self) -> None:
        """A Metadata response naming brokers arrived: stop the timer."""
        self._attempt_start_ms = None

    def request(self) -> None:
        """A broker answered REBOOTSTRAP_REQUIRED in a Metadata response: rebootstrap at the
        end of this poll."""
        self._requested = True

    def needs_rebootstrap(self, now_ms: int) -> bool:
        """True when a rebootstrap is due now: requested by a broker, or the refresh has gone
        without an answer for longer than the trigger."""
        if not self.enabled:
            return False
        if self._requested:
            return True
        start = self._attempt_start_ms
        return start is not None and now_ms - start > self.trigger_ms

    def on_rebootstrap(self, now_ms: int) -> None:
        """The client went back to ``bootstrap.servers``: the timer starts again from now."""
        self._requested = False
        self._attempt_start_ms = now_ms

    def expected_cluster(self, node_id: int, cluster: Cluster) -> tuple[str, int] | None:
        """``(cluster id, node id)`` for the ApiVersions request of a connection to
        ``node_id``, or None when none is sent: the strategy is ``none``, the check is off, the
        cluster id is unknown, or ``node_id`` is no broker of ``cluster`` (a bootstrap address,
        or a coordinator or second fetch connection, whose id is not the broker's)."""
        if not (self.enabled and self.cluster_check):
            return None
        cluster_id = cluster.cluster_id
        if cluster_id is None or node_id < 0 or cluster.broker(node_id) is None:
            return None
        return cluster_id, node_id

"""An Apache Kafka cluster whose client traffic can pass through a fault proxy per broker.

:class:`ProxiedKafkaCluster` is :class:`benchmarks.harness.apache_kafka.KafkaCluster` with one more
listener on every broker, ``CLIENT``, advertised at the address of a
:class:`~benchmarks.harness.proxy.FaultProxy` that forwards to it. A client that bootstraps from
:attr:`ProxiedKafkaCluster.proxied_bootstrap` reaches the ``CLIENT`` listener through the
proxy, and the metadata it gets back names the proxies, so every connection it opens (fetch,
coordinator, metadata) crosses one. ``bootstrap_servers`` stays the direct ``PLAINTEXT``
listener: the producer, the other group members and replication between brokers never meet a
fault. ``cluster.proxy(broker_id)`` is that broker's proxy.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.harness.apache_kafka import KafkaCluster
from benchmarks.harness.proxy import FaultProxy
from kafkaconsumer.embedded import free_port

__all__ = ["ProxiedKafkaCluster"]


class ProxiedKafkaCluster(KafkaCluster):
    """A :class:`KafkaCluster` with a fault proxy in front of each broker's CLIENT listener.

    Thread-safety: as KafkaCluster; the proxies' fault controls may be used from any thread.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Take the arguments of :class:`KafkaCluster`."""
        super().__init__(*args, **kwargs)
        self._proxies: dict[int, FaultProxy] = {}

    def _props(
        self,
        node_id: int,
        roles: tuple[str, ...],
        ports: Mapping[str, int],
        voters: str,
        data: Path,
    ) -> dict[str, str]:
        props = super()._props(node_id, roles, ports, voters, data)
        if "broker" not in roles:
            return props
        old = self._proxies.pop(node_id, None)
        if old is not None:  # a retried build (a port was taken): start afresh
            old.stop()
        client_port = free_port()
        proxy = FaultProxy("127.0.0.1", client_port).start()
        self._proxies[node_id] = proxy
        props["listeners"] += f",CLIENT://127.0.0.1:{client_port}"
        props["listener.security.protocol.map"] += ",CLIENT:PLAINTEXT"
        props["advertised.listeners"] += f",CLIENT://127.0.0.1:{proxy.port}"
        return props

    def proxy(self, broker_id: int) -> FaultProxy:
        """The fault proxy in front of broker ``broker_id``."""
        return self._proxies[broker_id]

    @property
    def proxies(self) -> list[FaultProxy]:
        """Every broker's proxy, by broker id."""
        return [p for _, p in sorted(self._proxies.items())]

    @property
    def proxied_bootstrap(self) -> str:
        """bootstrap.servers through the proxies."""
        return ",".join(p.address for p in self.proxies)

    def restore_proxies(self) -> None:
        """Heal every proxy fault (latency, black hole, refusals)."""
        for proxy in self.proxies:
            proxy.set_latency(0)
            proxy.restore()

    def stop(self) -> None:
        """Stop the brokers, then the proxies."""
        super().stop()
        for proxy in self._proxies.values():
            proxy.stop()
        self._proxies = {}

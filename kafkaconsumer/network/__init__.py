"""The network layer: broker connections, the selector-driven client, the thread-safe consumer
client, TLS and SASL (Java: ``org.apache.kafka.clients.NetworkClient`` and friends).

See ``docs/network.md`` for the user-facing settings and ``docs/internals.md`` for the contract.
"""

from __future__ import annotations

from kafkaconsumer.network.client import NetworkClient
from kafkaconsumer.network.consumer_client import ConsumerNetworkClient
from kafkaconsumer.network.future import Future

__all__ = ["NetworkClient", "ConsumerNetworkClient", "Future"]

"""A :class:`KafkaConsumer` for unit tests of the facade's own loops, with fake collaborators.

The consumer is built by its constructor (no group, an address nothing listens on, the test's
clock), so every field the facade reads exists as in production; then the collaborators the
test scripts replace the real ones.
"""

from __future__ import annotations

from typing import Any

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.utils.clock import Time

__all__ = ["consumer_with_collaborators"]


def consumer_with_collaborators(
    *, time: Time, client: Any, metadata: Any, fetcher: Any
) -> KafkaConsumer:
    """A consumer on ``time`` whose network client, metadata and fetcher are the given fakes.

    The network client it built is closed first. Positions count as known, so ``poll()``'s
    loop goes straight to fetching.
    """
    consumer = KafkaConsumer({"bootstrap.servers": "127.0.0.1:9"}, _time=time)
    consumer._client.close()
    consumer._client = client
    consumer._metadata = metadata
    consumer._fetcher = fetcher
    consumer._cached_all_positions = True
    return consumer

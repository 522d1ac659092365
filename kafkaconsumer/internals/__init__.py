"""The consumer engine, one module per Java ``consumer.internals`` class.

Nothing here is public API: :class:`~kafkaconsumer.consumer.KafkaConsumer` is the supported
entry point. Modules: ``subscription_state`` (assignment and positions), ``fetcher``,
``fetch_session``, ``completed_fetch``, ``offset_fetcher`` (fetching and offset lookups),
``timer`` and ``clock`` (timeouts over an injectable clock), and the group side
(``abstract_coordinator``, ``consumer_coordinator``, ``heartbeat``, ``consumer_protocol``,
``assignors``).
"""

from __future__ import annotations

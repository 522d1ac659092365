"""The consumer engine, one module per Java ``consumer.internals`` class.

Nothing here is public API: :class:`~kafkaconsumer.consumer.KafkaConsumer` is the supported
entry point. Modules: ``subscription_state`` (assignment and positions), ``fetch/`` (the
fetcher, its buffer and collector, the record decoders, fetch sessions and offset lookups),
and the group side
(``abstract_coordinator``, ``consumer_coordinator``, ``heartbeat``, ``consumer_protocol``,
``assignors``).
"""

from __future__ import annotations

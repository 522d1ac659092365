"""The consumer engine, one module per Java ``consumer.internals`` class.

Nothing here is public API: :class:`~kafkaconsumer.consumer.KafkaConsumer` is the supported
entry point. Modules: ``subscription_state`` (assignment and positions), ``fetch/`` (the
fetcher, its buffer and collector, the record decoders, fetch sessions and offset lookups),
and the group side: the package ``group`` (the members of each group protocol),
``consumer_protocol`` (the classic protocol's subscription and assignment encoding) and
``assignors``.
"""

from __future__ import annotations

"""Writing DataFrame rows to Kafka as Spark's Kafka sink reads them: a ``topic`` column or the
``topic`` option, ``value`` (required), and optional ``key``, ``headers`` and ``partition``
columns; binary or string keys and values."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.spark.options import KafkaOptions

__all__ = ["write_batches"]

_COLUMNS = {"topic", "key", "value", "headers", "partition"}


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def write_batches(opts: KafkaOptions, batches: Iterable[pa.RecordBatch]) -> int:
    """Produce every row of ``batches``; returns the count once the broker acknowledged them.

    A row without a topic (no ``topic`` column value and no ``topic`` option) raises
    ``ConfigError``, as Spark's sink does; a ``topic`` option wins over the column.
    """
    producer = KafkaProducer(dict(opts.kafka))
    count = 0
    futures = []
    try:
        for batch in batches:
            names = set(batch.schema.names)
            if "value" not in names:
                raise ConfigError("the DataFrame written to Kafka needs a value column")
            cols = {n: batch.column(n).to_pylist() for n in names & _COLUMNS}
            for i in range(batch.num_rows):
                topic = opts.topic or (cols["topic"][i] if "topic" in cols else None)
                if topic is None:
                    raise ConfigError("no topic: set the topic option or a topic column")
                headers = cols.get("headers")
                futures.append(
                    producer.send(
                        topic,
                        value=_bytes(cols["value"][i]),
                        key=_bytes(cols["key"][i]) if "key" in cols else None,
                        headers=(
                            [(h["key"], _bytes(h["value"])) for h in headers[i]]
                            if headers is not None and headers[i]
                            else None
                        ),
                        partition=cols["partition"][i] if "partition" in cols else None,
                    )
                )
                count += 1
                if len(futures) >= 10000:
                    producer.flush()
                    for fut in futures:
                        fut.get()
                    futures.clear()
        producer.flush()
        for fut in futures:
            fut.get()
    finally:
        producer.close()
    return count

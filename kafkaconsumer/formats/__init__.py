"""Schema-registry records: the Confluent wire format, a registry client, Avro deserializers and
their decoding into typed Arrow columns.

Needs the ``[formats]`` extra (fastavro) for Avro and pyarrow for Arrow columns::

    from kafkaconsumer import KafkaConsumer
    from kafkaconsumer.formats import AvroDeserializer

    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers="localhost:9092",
        value_deserializer=AvroDeserializer("http://localhost:8081", subject="orders-value"),
    )
"""

from __future__ import annotations

from kafkaconsumer.formats.avro import AvroDeserializer, parse_avro_schema
from kafkaconsumer.formats.registry import (
    RegisteredSchema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from kafkaconsumer.formats.wire import Framed, frame, split_frame

__all__ = [
    "AvroDeserializer",
    "Framed",
    "RegisteredSchema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "frame",
    "parse_avro_schema",
    "split_frame",
]

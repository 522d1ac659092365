"""Schema-registry records: the Confluent wire format, a registry client, deserializers and
their decoding into typed Arrow columns.

Avro (:mod:`kafkaconsumer.formats.avro`, fastavro), Protobuf
(:mod:`kafkaconsumer.formats.protobuf`, protobuf and grpcio-tools' protoc) and JSON Schema
(:mod:`kafkaconsumer.formats.json_schema`, jsonschema) come with the ``[formats]`` extra, as does
pyarrow for :mod:`kafkaconsumer.formats.arrow`. This package imports the Avro part only; the
others load when their modules are imported::

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

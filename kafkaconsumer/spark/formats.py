"""Typed ``key`` / ``value`` columns for the Data Source: schema-registry records decoded on the
executors into Arrow, with no JVM jar.

Options (names case-insensitive, as all Data Source options):

* ``valueFormat`` / ``keyFormat``: ``raw`` (the default: binary, as Spark's source), ``avro``,
  ``protobuf`` or ``json`` (JSON Schema);
* ``schema.registry.url`` and the registry client's other keys
  (``basic.auth.credentials.source``, ``basic.auth.user.info``, ``bearer.auth.token``,
  ``schema.registry.ssl.*.location``, ``schema.registry.request.timeout.ms``);
* ``valueSubject`` / ``keySubject``: the reader schema's subject (default ``<topic>-value`` /
  ``<topic>-key`` when one topic is subscribed), ``valueSchemaVersion`` / ``keySchemaVersion``
  (default ``latest``);
* ``valueSchema`` / ``keySchema``: the reader schema inline (Avro or JSON Schema); with
  ``avro`` and no ``schema.registry.url`` the records are plain Avro binary of this schema;
* ``mode``: ``FAILFAST`` (the default: a record that cannot be decoded fails the query naming
  topic, partition, offset and why) or ``PERMISSIVE`` (its key or value is null and the reason
  goes to a ``_corrupt_record`` string column, added last).

The column's type follows the reader schema, which the driver resolves when it plans the read
(the latest version of the subject then) and pins, so every task decodes into the same type.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.formats.registry import REGISTRY_CONFIG_DEFAULTS, SchemaRegistryClient
from kafkaconsumer.serialization import Deserializer

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = [
    "ColumnFormat",
    "Decoders",
    "FormatOptions",
    "decode_batch",
    "decode_batches",
    "decode_table",
    "pin",
    "spark_schema",
    "split_format_options",
]

FORMATS = ("raw", "avro", "protobuf", "json")
_REGISTRY_KEYS = {key.lower(): key for key in REGISTRY_CONFIG_DEFAULTS}
_SIDE_KEYS = ("format", "subject", "schemaversion", "schema")
_CORRUPT = "_corrupt_record"


@dataclass(frozen=True)
class ColumnFormat:
    """How the key or the value is decoded: the format, the reader schema's subject and version,
    or the reader schema's text (set by :func:`pin` for Avro and JSON Schema).

    Thread-safety: immutable.
    """

    format: str = "raw"
    subject: str | None = None
    version: str = "latest"
    schema: str | None = None


@dataclass(frozen=True)
class FormatOptions:
    """The format options of one read.

    Thread-safety: immutable.
    """

    key: ColumnFormat
    value: ColumnFormat
    registry: tuple[tuple[str, Any], ...]
    mode: str = "FAILFAST"

    @property
    def typed(self) -> bool:
        """True when the key or the value is decoded."""
        return self.key.format != "raw" or self.value.format != "raw"


def split_format_options(
    options: Mapping[str, Any],
) -> tuple[dict[str, Any], FormatOptions]:
    """Take the format options out of ``options``; returns the rest and the formats."""
    rest: dict[str, Any] = {}
    found: dict[str, str] = {}
    registry: dict[str, Any] = {}
    for name, value in options.items():
        lower = str(name).lower()
        if lower in _REGISTRY_KEYS:
            registry[_REGISTRY_KEYS[lower]] = value
        elif lower == "mode" or any(
            lower == side + key for side in ("key", "value") for key in _SIDE_KEYS
        ):
            found[lower] = str(value)
        else:
            rest[name] = value
    sides = {}
    for side in ("key", "value"):
        fmt = found.get(side + "format", "raw").strip().lower()
        if fmt not in FORMATS:
            raise ConfigError(f"option {side}Format={fmt!r} is not one of {', '.join(FORMATS)}")
        column = ColumnFormat(
            fmt,
            subject=found.get(side + "subject"),
            version=found.get(side + "schemaversion", "latest"),
            schema=found.get(side + "schema"),
        )
        if fmt == "raw" and (column.subject or column.schema):
            raise ConfigError(f"options {side}Subject/{side}Schema need {side}Format")
        if fmt == "protobuf" and column.schema:
            raise ConfigError(f"option {side}Schema is for avro and json; protobuf reads a subject")
        if fmt != "raw" and not registry and not (fmt == "avro" and column.schema):
            raise ConfigError(
                f"option {side}Format={fmt} needs schema.registry.url (or, for avro, an inline "
                f"{side}Schema of plain Avro records)"
            )
        sides[side] = column
    mode = found.get("mode", "FAILFAST").strip().upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise ConfigError(f"option mode={mode!r} must be FAILFAST or PERMISSIVE")
    if registry:
        SchemaRegistryClient(registry)  # a bad key or URL fails on the driver, naming it
    return rest, FormatOptions(sides["key"], sides["value"], tuple(sorted(registry.items())), mode)


def pin(formats: FormatOptions, topics: list[str] | None) -> FormatOptions:
    """``formats`` with each subject's version resolved (driver side), so that every task reads
    into the same schema even if the subject gets a new version during the query."""
    client = SchemaRegistryClient(dict(formats.registry)) if formats.registry else None
    sides = []
    for side, column in (("key", formats.key), ("value", formats.value)):
        if column.format == "raw" or column.schema is not None and client is None:
            sides.append(column)
            continue
        subject = column.subject
        if subject is None and column.schema is None:
            if not topics or len(topics) != 1:
                raise ConfigError(
                    f"option {side}Subject is needed unless exactly one topic is subscribed"
                )
            subject = f"{topics[0]}-{side}"
        if column.schema is not None:
            sides.append(column)
            continue
        assert client is not None and subject is not None
        registered = client.schema_version(subject, column.version)
        version = str(registered.version) if registered.version is not None else column.version
        if column.format == "protobuf":
            sides.append(ColumnFormat(column.format, subject, version, None))
        else:
            sides.append(ColumnFormat(column.format, subject, version, registered.schema_str))
    return FormatOptions(sides[0], sides[1], formats.registry, formats.mode)


def _deserializer(formats: FormatOptions, column: ColumnFormat, is_key: bool) -> Deserializer:
    registry = dict(formats.registry) or None
    if column.format == "avro":
        from kafkaconsumer.formats.avro import AvroDeserializer

        if registry is None:
            return AvroDeserializer(schema=column.schema, is_key=is_key)
        return AvroDeserializer(registry, reader_schema=column.schema, is_key=is_key)
    if column.format == "json":
        from kafkaconsumer.formats.json_schema import JsonSchemaDeserializer

        assert registry is not None
        return JsonSchemaDeserializer(registry, reader_schema=column.schema, is_key=is_key)
    from kafkaconsumer.formats.protobuf import ProtobufDeserializer

    assert registry is not None
    return ProtobufDeserializer(
        registry, subject=column.subject, version=column.version, is_key=is_key
    )


def _spark_arrow(arrow: pa.DataType) -> pa.DataType:
    # Spark has no unsigned integers and keeps timestamps in microseconds.
    if arrow == pa.uint32():
        return pa.int64()
    if arrow == pa.uint64():
        return pa.decimal128(20, 0)
    if pa.types.is_timestamp(arrow):
        return pa.timestamp("us", tz=arrow.tz)
    if pa.types.is_struct(arrow):
        return pa.struct([pa.field(f.name, _spark_arrow(f.type), f.nullable) for f in arrow])
    if pa.types.is_list(arrow):
        return pa.list_(pa.field("element", _spark_arrow(arrow.value_type)))
    if pa.types.is_map(arrow):
        return pa.map_(_spark_arrow(arrow.key_type), _spark_arrow(arrow.item_type))
    if pa.types.is_fixed_size_binary(arrow):
        return pa.binary()
    return arrow


class Decoders:
    """The key and value decoders of one task, built on the executor.

    Thread-safety: one per task; Spark reads a partition from one thread.
    """

    def __init__(self, formats: FormatOptions) -> None:
        """Build the decoders (the registry is asked on first use)."""
        from kafkaconsumer.formats.arrow import ArrowRecordDecoder

        self.formats = formats
        self.key = (
            ArrowRecordDecoder(_deserializer(formats, formats.key, True), mode=formats.mode)
            if formats.key.format != "raw"
            else None
        )
        self.value = (
            ArrowRecordDecoder(_deserializer(formats, formats.value, False), mode=formats.mode)
            if formats.value.format != "raw"
            else None
        )

    def types(self) -> tuple[pa.DataType, pa.DataType]:
        """The Arrow types of the key and value columns, as Spark takes them."""
        key = _spark_arrow(self.key.arrow_type) if self.key else pa.binary()
        value = _spark_arrow(self.value.arrow_type) if self.value else pa.binary()
        return key, value


def spark_schema(formats: FormatOptions, include_headers: bool) -> StructType:
    """The Spark schema of the read: Spark's Kafka source schema with the typed key/value
    columns (and ``_corrupt_record`` in PERMISSIVE mode)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        TimestampType,
    )
    from pyspark.sql.types import StructType as SparkStruct

    key, value = Decoders(formats).types()
    fields = [
        StructField(
            "key",
            BinaryType()
            if formats.key.format == "raw"
            else from_arrow_type(key, prefer_timestamp_ntz=False),
        ),
        StructField(
            "value",
            BinaryType()
            if formats.value.format == "raw"
            else from_arrow_type(value, prefer_timestamp_ntz=False),
        ),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = SparkStruct([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    if formats.mode == "PERMISSIVE":
        fields.append(StructField(_CORRUPT, StringType()))
    return SparkStruct(fields)


def decode_batches(
    formats: FormatOptions, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Each batch (one partition's rows in Spark's Arrow form) with the key and value
    decoded."""
    decoders = Decoders(formats)
    for batch in batches:
        yield decode_batch(decoders, batch)


def decode_batch(decoders: Decoders, batch: pa.RecordBatch) -> pa.RecordBatch:
    """One batch with its key and value columns decoded (see :func:`decode_batches`)."""
    names = batch.schema.names
    columns = dict(zip(names, batch.columns, strict=True))
    topics = columns["topic"].to_pylist()
    partitions = columns["partition"].to_pylist()
    offsets = columns["offset"].to_pylist()
    headers = columns["headers"].to_pylist() if "headers" in columns else None
    header_pairs = (
        [[(h["key"], h["value"]) for h in row] if row else None for row in headers]
        if headers is not None
        else None
    )
    reasons: list[str | None] = [None] * batch.num_rows
    key_type, value_type = decoders.types()
    for name, decoder, arrow in (
        ("key", decoders.key, key_type),
        ("value", decoders.value, value_type),
    ):
        if decoder is None:
            continue
        topic = topics[0] if topics else ""
        decoded = decoder.decode(
            topic, partitions, offsets, columns[name].to_pylist(), header_pairs
        )
        columns[name] = decoded.values.cast(arrow)
        if decoded.corrupt is not None:
            for index, reason in enumerate(decoded.corrupt.to_pylist()):
                if reason is not None and reasons[index] is None:
                    reasons[index] = f"{name}: {reason}"
    arrays = [columns[name] for name in names]
    out_names = list(names)
    if decoders.formats.mode == "PERMISSIVE":
        arrays.append(pa.array(reasons, type=pa.string()))
        out_names.append(_CORRUPT)
    return pa.RecordBatch.from_arrays(arrays, names=out_names)


def decode_table(formats: FormatOptions, table: pa.Table) -> pa.Table:
    """``table`` (rows in Spark's Arrow form, as :func:`read_kafka_table
    <kafkaconsumer.spark.driver.read_kafka_table>` gathers them) with the key and value
    decoded."""
    decoders = Decoders(formats)
    batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
    out: list[pa.RecordBatch] = []
    for batch in batches:
        # A batch is decoded as one topic's records (the topic names the subject and errors).
        topics = batch.column(batch.schema.get_field_index("topic")).to_pylist()
        start = 0
        for end in range(1, len(topics) + 1):
            if end == len(topics) or topics[end] != topics[start]:
                out.append(decode_batch(decoders, batch.slice(start, end - start)))
                start = end
        if not topics:
            out.append(decode_batch(decoders, batch))
    return pa.Table.from_batches(out)

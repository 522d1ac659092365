"""Importing the package loads only what a plaintext consumer of uncompressed data needs: TLS,
SASL's hashing, JSON, the compression libraries, the record encoder and the IDNA codec load on
first use (together about 20 ms of a short script's start-up), and the group machinery (the
coordinators, assignors and membership managers, about 8 ms more) when a consumer with a
group.id is made; protobuf and the OTLP classes of client telemetry on its first push;
`dataclasses` (with `inspect`, about 4 ms) not at all."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFERRED = (
    "ssl",
    "hashlib",
    "hmac",
    "json",
    "lz4",
    "zstandard",
    "snappy",
    "cramjam",
    "kafkaconsumer.record.encoder",
    "encodings.idna",
    "kafkaconsumer.internals.group.consumer_coordinator",
    "kafkaconsumer.internals.group.abstract_coordinator",
    "kafkaconsumer.internals.assignors",
    "dataclasses",
    # Client telemetry's OTLP encoding: loaded by the first push only.
    "google.protobuf",
    "opentelemetry",
)


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {DEFERRED!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_importing_the_consumer_defers_what_it_may_not_need() -> None:
    code = (
        "from kafkaconsumer import KafkaConsumer, TopicPartition\n"
        "c = KafkaConsumer({'bootstrap.servers': 'localhost:1'})\n"
        "c.close()\n"
        # The build's precompiled protocol codecs load without hashing anything.
        "from kafkaconsumer.protocol import ApiKey, api\n"
        "api.get_codec(ApiKey.METADATA, 12, 'request')\n"
        "api.get_codec(ApiKey.FETCH, 15, 'response')\n"
    )
    assert _loaded_after(code) == []


def test_what_is_deferred_loads_when_used() -> None:
    code = (
        "from kafkaconsumer import KafkaConsumer\n"
        "from kafkaconsumer.record import encode_batch, decode_fetched_records\n"
        "from kafkaconsumer.record.codecs import CODEC_LZ4, CODEC_ZSTD\n"
        "batch = encode_batch([(None, b'v' * 100, [], 1)], compression=CODEC_LZ4)\n"
        "assert decode_fetched_records(batch, 't', 0, 0).records[0].value == b'v' * 100\n"
        "batch = encode_batch([(None, b'v' * 100, [], 1)], compression=CODEC_ZSTD)\n"
        "assert decode_fetched_records(batch, 't', 0, 0).records[0].value == b'v' * 100\n"
        "KafkaConsumer({'bootstrap.servers': '127.0.0.1:1', 'security.protocol': 'SSL'}).close()"
    )
    loaded = _loaded_after(code)
    for name in ("ssl", "lz4", "zstandard", "kafkaconsumer.record.encoder"):
        assert name in loaded


def test_a_group_consumer_loads_the_group_machinery() -> None:
    code = (
        "from kafkaconsumer import KafkaConsumer\n"
        "KafkaConsumer({'bootstrap.servers': 'localhost:1', 'group.id': 'g'}).close()\n"
    )
    loaded = _loaded_after(code)
    for name in (
        "kafkaconsumer.internals.group.consumer_coordinator",
        "kafkaconsumer.internals.group.abstract_coordinator",
        "kafkaconsumer.internals.assignors",
    ):
        assert name in loaded

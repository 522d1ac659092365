"""Coverage-guided fuzzing with atheris (libFuzzer for Python), where atheris installs.

One target takes the fuzzer's bytes as: a selector byte, then the input. It feeds the input to
response decoding (an api key and version from the next bytes), to record-batch decoding on
both decoders (their verdicts must agree), or to one decompression codec, and lets only the
documented exceptions through. Run by ``test_atheris.py`` for a bounded number of inputs, or by
hand::

    python -m tests.chaos.atheris_fuzz -runs=100000 -max_len=4096
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import atheris

with atheris.instrument_imports(include=["kafkaconsumer"]):
    from kafkaconsumer.errors import (
        CorruptRecordError,
        KafkaProtocolError,
        RecordTooLargeError,
        UnsupportedCodecError,
        UnsupportedVersionError,
    )
    from kafkaconsumer.protocol import SUPPORTED_VERSIONS, decode_response
    from kafkaconsumer.record import _pyrecords, codecs

cython_records: ModuleType | None
try:
    from kafkaconsumer.record import _crecords as cython_records
except ImportError:  # the pure decoder alone is still worth fuzzing
    cython_records = None

_KEYS = sorted(SUPPORTED_VERSIONS)
_RECORD_ERRORS = (CorruptRecordError, RecordTooLargeError, UnsupportedCodecError)
_LIMIT = 1024 * 1024


def _records(module: Any, data: bytes) -> Any:
    try:
        result = module.decode_fetched_records(data, "fz", 0, 0, check_crcs=False)
    except _RECORD_ERRORS as exc:
        return type(exc)
    return ([r.as_tuple() for r in result.records], result.next_offset, result.partial)


def test_one_input(raw: bytes) -> None:
    """The fuzz target: one input, any documented outcome."""
    if len(raw) < 3:
        return
    kind, data = raw[0] % 3, raw[1:]
    if kind == 0:
        api_key = _KEYS[data[0] % len(_KEYS)]
        lo, hi = SUPPORTED_VERSIONS[api_key]
        version = lo + data[1] % (hi - lo + 1)
        try:
            decode_response(api_key, version, data[2:])
        except (KafkaProtocolError, UnsupportedVersionError):
            pass
    elif kind == 1:
        pure = _records(_pyrecords, data)
        if cython_records is not None:
            assert _records(cython_records, data) == pure, "the decoders disagree"
    else:
        codec = (codecs.CODEC_GZIP, codecs.CODEC_SNAPPY, codecs.CODEC_LZ4, codecs.CODEC_ZSTD)[
            data[0] % 4
        ]
        try:
            out = codecs.decompress(codec, data[1:], _LIMIT)
        except (codecs.CodecError, codecs.DecompressionLimitExceeded):
            return
        assert len(out) <= _LIMIT


def main(argv: list[str]) -> None:
    """Run libFuzzer with ``argv`` (its own flags: -runs, -max_len, -rss_limit_mb ...)."""
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)

"""The decoders' own CRC-32C (C, ``_crc32c.h``): the SSE 4.2 instruction and the table method
both give the ``crc32c`` package's result on every length up to 4 KiB, from any alignment."""

from __future__ import annotations

import importlib
import random
from typing import Any

import crc32c as package
import pytest

from tests.record.conftest import EXPECT_EXTENSIONS

carrow: Any
try:
    carrow = importlib.import_module("kafkaconsumer.record._carrow")
except ImportError:
    carrow = None

pytestmark = pytest.mark.skipif(
    carrow is None and not EXPECT_EXTENSIONS, reason="the Cython decoders are not built"
)

DATA = random.Random(25).randbytes(4096 + 8)


def _methods() -> list[str]:
    return ["table", "hardware", "default"]


@pytest.mark.parametrize("method", _methods())
def test_every_length_up_to_4096_at_every_alignment(method: str) -> None:
    if method == "hardware" and not carrow.crc32c_hardware_available():
        pytest.skip("this processor has no CRC-32C instruction")
    function = {
        "table": carrow.crc32c_table,
        "hardware": carrow.crc32c_hardware,
        "default": carrow.crc32c,
    }[method]
    view = memoryview(DATA)
    for length in range(4097):
        for start in range(8):
            chunk = view[start : start + length]
            assert function(chunk) == package.crc32c(chunk), (method, length, start)


@pytest.mark.parametrize("method", ["table", "hardware"])
def test_continues_from_a_previous_crc(method: str) -> None:
    if method == "hardware" and not carrow.crc32c_hardware_available():
        pytest.skip("this processor has no CRC-32C instruction")
    function = carrow.crc32c_table if method == "table" else carrow.crc32c_hardware
    for cut in (0, 1, 7, 8, 9, 1000, len(DATA)):
        assert function(DATA[cut:], function(DATA[:cut])) == package.crc32c(DATA)


def test_check_value_and_buffer_types() -> None:
    assert carrow.crc32c(b"123456789") == 0xE3069283
    assert carrow.crc32c(bytearray(b"123456789")) == 0xE3069283
    assert carrow.crc32c(memoryview(b"x123456789")[1:]) == 0xE3069283


def test_hardware_method_refuses_where_the_processor_lacks_it() -> None:
    if carrow.crc32c_hardware_available():
        assert carrow.crc32c_hardware(b"123456789") == 0xE3069283
    else:
        with pytest.raises(ValueError):
            carrow.crc32c_hardware(b"123456789")

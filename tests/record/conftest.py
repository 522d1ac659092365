"""Fixtures of the record tests: every test that takes ``impl`` runs on both decoders."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from kafkaconsumer.record import _pyrecords, codecs


def _cython() -> ModuleType | None:
    try:
        return importlib.import_module("kafkaconsumer.record._crecords")
    except ImportError:
        return None


CYTHON = _cython()
EXPECT_EXTENSIONS = os.environ.get("KAFKACONSUMER_EXPECT_EXTENSIONS") == "1"


def _carrow() -> ModuleType | None:
    try:
        return importlib.import_module("kafkaconsumer.record._carrow")
    except ImportError:
        return None


CARROW = _carrow()


@pytest.fixture(autouse=True)
def native_crc_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch these tests encode or decode through the pure-Python path also has its
    CRC-32C computed by the Cython decoders' C code (table method, and the hardware
    instruction where the processor has it), which must give the ``crc32c`` package's value."""
    if CARROW is None:
        return
    from kafkaconsumer.record import _crc, encoder

    reference = _crc.crc32c
    native = CARROW

    def checked(data: bytes | bytearray | memoryview) -> int:
        expected = reference(data)
        assert native.crc32c_table(data) == expected
        if native.crc32c_hardware_available():
            assert native.crc32c_hardware(data) == expected
        return expected

    monkeypatch.setattr(_pyrecords, "crc32c", checked)
    monkeypatch.setattr(encoder, "crc32c", checked)


@pytest.fixture(params=["pure", "cython"])
def impl(request: pytest.FixtureRequest) -> ModuleType:
    """The decoder module under test (``_pyrecords`` or ``_crecords``)."""
    if request.param == "pure":
        return _pyrecords
    if CYTHON is None:
        if EXPECT_EXTENSIONS:
            pytest.fail("KAFKACONSUMER_EXPECT_EXTENSIONS=1 but the Cython decoder did not import")
        pytest.skip("the Cython decoder is not built")
    return CYTHON


@pytest.fixture
def small_decompression_limit() -> Iterator[int]:
    """Shrink the decompression bound to 1 MiB (ratio 4) for the test, then restore it."""
    previous = codecs.set_decompression_limits(1 << 20, 4)
    try:
        yield 1 << 20
    finally:
        codecs.set_decompression_limits(*previous)

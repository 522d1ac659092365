"""CRC-32C comes from the crc32c package's compiled module, loaded without the package's
``__init__`` (which reads its version through importlib.metadata at import)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from kafkaconsumer.record import _crc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_is_crc32c_and_the_packages_own_function() -> None:
    import crc32c as package

    assert _crc.crc32c(b"123456789") == 0xE3069283
    data = bytes(range(256)) * 33
    assert _crc.crc32c(data) == package.crc32c(data)
    assert _crc.crc32c(memoryview(data)[5:77]) == package.crc32c(data[5:77])


def test_importing_kafkaconsumer_does_not_run_the_crc32c_package_init() -> None:
    code = (
        "import sys, kafkaconsumer.consumer; "
        "print('crc32c' in sys.modules, 'importlib.metadata' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]


def test_falls_back_to_the_package_import_when_the_module_is_not_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import crc32c as package

    monkeypatch.delitem(sys.modules, "crc32c")
    monkeypatch.delitem(sys.modules, "crc32c._crc32c", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    # The fallback imports the package again (a fresh module object from sys.path).
    function = _crc._load()
    assert function(b"123456789") == 0xE3069283
    assert function(b"abc") == package.crc32c(b"abc")

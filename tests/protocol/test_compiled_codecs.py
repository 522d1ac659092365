"""The build's precompiled codecs (``_codecs.marshal``): used only when they match the generator."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.protocol import codegen
from kafkaconsumer.protocol.api import ApiKey
from kafkaconsumer.protocol.messages import APIS

pytestmark = pytest.mark.timeout(60)

FETCH_BODY: dict[str, Any] = {
    "replica_id": -1,
    "max_wait_ms": 500,
    "min_bytes": 1,
    "max_bytes": 1 << 20,
    "isolation_level": 0,
    "session_id": 0,
    "session_epoch": -1,
    "topics": [
        {
            "topic": "t",
            "partitions": [{"partition": 0, "fetch_offset": 5, "partition_max_bytes": 1024}],
        }
    ],
    "forgotten_topics_data": [],
    "rack_id": "",
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("codecs") / "codecs.marshal"
    assert codegen.write_compiled(str(path), APIS) == sum(
        2 * (api.max_version - api.min_version + 1) for api in APIS.values()
    )
    return path


def _encode(cache: codegen.CodecCache, version: int) -> bytes:
    codec = cache.get(ApiKey.FETCH, version, "request")
    assert codec is not None
    out = bytearray()
    codec.encode(out, dict(FETCH_BODY))
    return bytes(out)


def test_stored_code_is_used_and_behaves_as_compiled_code(
    compiled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = {v: _encode(codegen.CodecCache(APIS, None), v) for v in (4, 12)}

    def no_compile(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("compiled at run time although the build stored the code")

    monkeypatch.setattr(codegen, "compile", no_compile, raising=False)
    cache = codegen.CodecCache(APIS, str(compiled))
    assert {v: _encode(cache, v) for v in (4, 12)} == expected
    codec = cache.get(ApiKey.FETCH, 12, "request")
    assert codec is not None
    body, _ = codec.decode(memoryview(expected[12]))
    assert body["topics"][0]["partitions"][0]["fetch_offset"] == 5


def test_code_from_another_generator_is_not_used(
    compiled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = codegen._generate
    compiled_now: list[str] = []

    def changed(api: Any, version: int, direction: str) -> Any:
        source, ns, dec, enc = real(api, version, direction)
        return "# changed since the build\n" + source, ns, dec, enc

    def counting_compile(source: str, filename: str, mode: str) -> Any:
        compiled_now.append(filename)
        return compile(source, filename, mode)

    monkeypatch.setattr(codegen, "_generate", changed)
    monkeypatch.setattr(codegen, "compile", counting_compile, raising=False)
    cache = codegen.CodecCache(APIS, str(compiled))
    assert _encode(cache, 12) == _encode(codegen.CodecCache(APIS, None), 12)
    assert compiled_now  # the stale stored code was ignored


@pytest.mark.parametrize("content", [b"", b"not a codec file", None])
def test_missing_or_foreign_file_means_compiling(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "codecs.marshal"
    if content is not None:
        path.write_bytes(content)
    cache = codegen.CodecCache(APIS, str(path))
    assert _encode(cache, 12) == _encode(codegen.CodecCache(APIS, None), 12)


def test_file_of_another_python_is_ignored(compiled: Path, tmp_path: Path) -> None:
    blob = compiled.read_bytes()
    magic = importlib.util.MAGIC_NUMBER
    other = tmp_path / "other.marshal"
    other.write_bytes(bytes([magic[0] ^ 1]) + blob[1:])
    cache = codegen.CodecCache(APIS, str(other))
    assert _encode(cache, 12) == _encode(codegen.CodecCache(APIS, None), 12)

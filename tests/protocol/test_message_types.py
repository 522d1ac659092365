"""The generated message types stay in step with the definitions and describe what the codecs
produce."""

from __future__ import annotations

import subprocess
import sys
import typing
import uuid
from pathlib import Path

import pytest

from kafkaconsumer.protocol import ApiKey, decode_response, encode_response, get_api
from kafkaconsumer.protocol import message_types as mt
from kafkaconsumer.protocol.messages import ALL_APIS


def test_generated_module_matches_the_definitions() -> None:
    """tools/gen_message_types.py --check fails when a definition changed and the module did not."""
    tool = Path(__file__).resolve().parents[2] / "tools" / "gen_message_types.py"
    if not tool.exists():
        pytest.skip("not a source checkout (the tests run against an installed package)")
    proc = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def test_every_api_has_a_request_and_a_response_type() -> None:
    """Each definition has its two top-level types, and their keys are the definition's fields."""
    for api in ALL_APIS:
        request = getattr(mt, f"{api.name}Request")
        response = getattr(mt, f"{api.name}Response")
        assert set(request.__annotations__) == {f.name for f in api.request}
        assert set(response.__annotations__) == {f.name for f in api.response}
        assert request.__total__ is False
        assert response.__required_keys__ == frozenset(f.name for f in api.response)


@pytest.mark.parametrize("version", [4, 12, 13, 17])
def test_decoded_fetch_response_has_every_typed_key(version: int) -> None:
    """A decoded Fetch response carries every key its type declares, at old and new versions."""
    body = {
        "responses": [
            {
                "topic": "t",
                "topic_id": uuid.uuid4(),
                "partitions": [{"partition_index": 0, "records": b""}],
            }
        ]
    }
    frame = encode_response(ApiKey.FETCH, version, 7, body)
    _, decoded = decode_response(ApiKey.FETCH, version, frame[4:])
    hints = typing.get_type_hints(mt.FetchResponse)
    assert set(decoded) - {"_unknown_tags"} == set(hints)
    topic = decoded["responses"][0]
    assert set(topic) - {"_unknown_tags"} == set(typing.get_type_hints(mt.FetchResponseResponse))
    part = topic["partitions"][0]
    assert set(part) - {"_unknown_tags"} == set(
        typing.get_type_hints(mt.FetchResponseResponsePartition)
    )
    assert isinstance(part["records"], memoryview)


def test_nested_type_names_follow_the_field_path() -> None:
    """Nested structs are named after the message and the (singular) field path."""
    assert get_api(ApiKey.METADATA).name == "Metadata"
    hints = typing.get_type_hints(mt.MetadataResponse)
    assert hints["topics"] == list[mt.MetadataResponseTopic]
    assert (
        typing.get_type_hints(mt.MetadataResponseTopic)["partitions"]
        == list[mt.MetadataResponseTopicPartition]
    )


def test_the_library_never_imports_the_types_at_run_time() -> None:
    """The types are for the type checker only: no module of the package loads them (creating
    the classes would cost start-up time for nothing)."""
    probe = (
        "import importlib, pkgutil, sys\n"
        "import kafkaconsumer\n"
        "for m in pkgutil.walk_packages(kafkaconsumer.__path__, 'kafkaconsumer.'):\n"
        "    if m.name.endswith(('__main__', '.message_types')):\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except ImportError:\n"
        "        pass\n"
        "print('kafkaconsumer.protocol.message_types' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_mypy_rejects_a_misspelt_key_in_get(tmp_path: Path) -> None:
    """With the project's mypy configuration, ``.get()`` of a key the message type does not name
    is an error, as ``[]`` of one is."""
    api = pytest.importorskip("mypy.api")
    root = Path(__file__).resolve().parents[2]
    if not (root / "tools" / "mypy_typeddict_get.py").exists():
        pytest.skip("not a source checkout (the tests run against an installed package)")
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from kafkaconsumer.protocol.message_types import FetchResponseResponsePartition\n"
        "\n"
        "\n"
        "def read(part: FetchResponseResponsePartition) -> object:\n"
        '    return (part.get("high_watermark", -1), part.get("high_water_mark", -1))\n',
        encoding="utf-8",
    )
    out, err, status = api.run(
        [
            "--config-file",
            str(root / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(probe),
        ]
    )
    assert status == 1, out + err
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1, out
    assert 'has no key "high_water_mark"' in errors[0]

"""Every API and version we define matches Apache Kafka's own message specs, field by field.

The specs are the ``common/message/*.json`` files inside the ``kafka-clients`` jar, fetched with
Maven into a cache outside the repository (``~/.cache/kafkaconsumer/kafka-clients``, or under
``KAFKACONSUMER_CACHE_DIR``). Kafka 4 dropped the oldest versions of many APIs (KIP-896) that
this client still speaks to older brokers, so each of our versions is checked against the newest
of :data:`SPEC_VERSIONS` whose ``validVersions`` include it. Compared per version: which fields
exist, their names (snake_case), types, array-ness, nullability, taggedness, defaults,
ignorability where it matters, and the flexible versions.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import apache_kafka
from kafkaconsumer.protocol.messages import ALL_APIS
from kafkaconsumer.protocol.schema import Api, VersionRange

_PRIMITIVES = {
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "float64",
    "bool",
    "string",
    "bytes",
    "records",
    "uuid",
}


#: Kafka versions whose specs are read, newest first: the version the tests run against, then
#: the last 3.x release (the last to describe the versions KIP-896 removed).
SPEC_VERSIONS = (apache_kafka.requested_version(), "3.9.2")
_MAVEN_TIMEOUT_S = 600


def _cache_dir() -> Path:
    override = os.environ.get("KAFKACONSUMER_CACHE_DIR")
    root = (
        Path(override)
        if override
        else (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafkaconsumer")
    )
    return root / "kafka-clients"


def _clients_jar(version: str) -> Path:
    """The kafka-clients jar of ``version``, fetched with Maven once (skips without Maven)."""
    directory = _cache_dir()
    jar = directory / f"kafka-clients-{version}.jar"
    if jar.exists():
        return jar
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"the kafka-clients jar is fetched with Maven: {missing}")
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session may be fetching it
        if jar.exists():
            return jar
        staging = directory / f"partial-{version}"
        shutil.rmtree(staging, ignore_errors=True)
        result = subprocess.run(
            [
                "mvn",
                "-q",
                "-B",
                "dependency:copy",
                f"-Dartifact=org.apache.kafka:kafka-clients:{version}",
                f"-DoutputDirectory={staging}",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_MAVEN_TIMEOUT_S,
            check=False,
        )
        fetched = staging / jar.name
        assert result.returncode == 0 and fetched.exists(), (
            f"Maven could not fetch kafka-clients {version}: "
            f"{(result.stdout + result.stderr)[-2000:]}"
        )
        fetched.rename(jar)
        shutil.rmtree(staging, ignore_errors=True)
    return jar


@cache
def _specs(version: str) -> dict[str, dict[str, Any]]:
    """File name -> parsed spec, from the kafka-clients jar of ``version``."""
    jar_path = _clients_jar(version)
    out: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(jar_path) as jar:
        for name in jar.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                text = jar.read(name).decode("utf-8")
                out[name.rsplit("/", 1)[1]] = json.loads(re.sub(r"//[^\n]*", "", text))
    assert out, f"no message specs in {jar_path}"
    return out


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name).lower()


def _spec_default(value: Any, ftype: str) -> Any:
    if not isinstance(value, str) or ftype == "string":
        return None if value == "null" else value
    if value == "null":
        return None
    if value in ("true", "false"):
        return value == "true"
    return int(value, 0)


def _rng(text: str | None) -> VersionRange:
    return VersionRange(text or "none")


def _compare_fields(
    spec_fields: list[dict[str, Any]],
    ours: list[Any],
    versions: list[int],
    where: str,
    common: dict[str, list[dict[str, Any]]],
    problems: list[str],
) -> None:
    by_name = {f.name: f for f in ours}
    matched = set()
    for sf in spec_fields:
        name = _snake(sf["name"])
        present = _rng(sf.get("versions"))
        relevant = [v for v in versions if present.contains(v)]
        field = by_name.get(name)
        if field is None:
            if relevant:
                problems.append(f"{where}.{name}: missing")
            continue
        matched.add(name)
        for v in versions:
            if present.contains(v) != field.present_in(v):
                problems.append(f"{where}.{name}: presence differs at v{v}")
            elif present.contains(v):
                if _rng(sf.get("nullableVersions")).contains(v) != field.nullable_in(v):
                    problems.append(f"{where}.{name}: nullability differs at v{v}")
                tagged = "tag" in sf and _rng(sf.get("taggedVersions")).contains(v)
                if tagged != field.tagged_in(v):
                    problems.append(f"{where}.{name}: taggedness differs at v{v}")
        if not relevant:
            continue
        # Ignorability only matters where one of our versions lacks the field.
        if len(relevant) < len(versions) and bool(sf.get("ignorable", False)) != field.ignorable:
            problems.append(f"{where}.{name}: ignorable differs")
        ftype = sf["type"]
        element = ftype[2:] if ftype.startswith("[]") else ftype
        if ftype.startswith("[]") != field.is_array:
            problems.append(f"{where}.{name}: array-ness differs")
        if element in _PRIMITIVES:
            if field.element != element:
                problems.append(f"{where}.{name}: type {ftype} differs")
        elif field.struct_fields is None:
            problems.append(f"{where}.{name}: should be a struct")
        else:
            sub = sf.get("fields") or common.get(element, [])
            # Inside a struct only the versions carrying the struct matter.
            _compare_fields(sub, field.struct_fields, relevant, f"{where}.{name}", common, problems)
        if "default" in sf and _spec_default(sf["default"], element) != field.default:
            problems.append(f"{where}.{name}: default {sf['default']!r} vs {field.default!r}")
    for field in ours:
        if field.name not in matched and any(field.present_in(v) for v in versions):
            problems.append(f"{where}.{field.name}: not in the spec")


@pytest.mark.timeout(900)  # the first call may fetch the jars with Maven
@pytest.mark.parametrize("api", ALL_APIS, ids=[a.name for a in ALL_APIS])
def test_definition_matches_the_kafka_clients_message_spec(api: Api) -> None:
    problems: list[str] = []
    for kind, ours in (("Request", api.request), ("Response", api.response)):
        unchecked = list(range(api.min_version, api.max_version + 1))
        for kafka in SPEC_VERSIONS:
            spec = _specs(kafka).get(f"{api.name}{kind}.json")
            if spec is None:
                continue
            assert spec["apiKey"] == api.key
            valid = _rng(spec.get("validVersions"))
            versions = [v for v in unchecked if valid.contains(v)]
            if not versions:
                continue
            unchecked = [v for v in unchecked if v not in versions]
            where = f"{kind} (Kafka {kafka})"
            flexible = _rng(spec.get("flexibleVersions"))
            for v in versions:
                if flexible.contains(v) != api.is_flexible(v):
                    problems.append(f"{where}: flexibility differs at v{v}")
            common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
            _compare_fields(spec["fields"], ours, versions, where, common, problems)
        if unchecked:
            problems.append(
                f"{kind}: versions {unchecked} are in no spec of Kafka {', '.join(SPEC_VERSIONS)}"
            )
    assert problems == []


def test_every_spec_we_name_exists() -> None:
    # A renamed or removed message in a newer Kafka shows up here, not as a silent pass.
    specs = _specs(SPEC_VERSIONS[0])
    names = {f"{a.name}{kind}.json" for a in ALL_APIS for kind in ("Request", "Response")}
    assert names - set(specs) == set()

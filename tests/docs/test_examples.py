"""Every ``python`` code block in the README and in docs/ runs against the session broker.

Each block runs in its own subprocess with the broker's address in place of
``localhost:9092``. An HTML comment on the line before a block changes how it runs
(directives separated by ``;``):

- ``<!-- example: no-run: REASON -->``: not run (reported as a skip with the reason); only for
  blocks that cannot run, such as a fragment of an application or a TLS setup with files.
- ``<!-- example: continues -->``: runs after the previous block of the same file, in the same
  process (for a page that builds one example over several blocks).
- ``<!-- example: until-interrupted -->``: a poll loop that runs until it is stopped; it is
  interrupted (SIGINT) once it printed a line or after 40 s, and must then end with nothing but
  the KeyboardInterrupt on stderr.

Topic names in a block (quoted strings passed to ``subscribe``, ``TopicPartition`` or
``send``) are replaced by fresh names, each created with three partitions holding three
records, so that examples which read find something and runs never share state.

On Tansu, blocks that join a group with the default 45 s session are skipped (Tansu holds a
group's first join for half the session, about 23 s each), and so are blocks that start Spark
(20-30 s each; tests/spark runs the same source on Tansu); the Apache Kafka pass runs them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import default_sigint

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_BLOCK = re.compile(
    r"(?:<!--\s*example:(?P<directives>.*?)-->\s*\n)?```python\n(?P<code>.*?)```", re.S
)
_TOPIC_USE = re.compile(
    r"""(?:subscribe\(\s*\[|TopicPartition\(|\.send\(|create_topics\(\s*\{)\s*"([A-Za-z0-9._-]+)\""""
)
_PLACEHOLDER = "localhost:9092"


@dataclass
class Example:
    """One code block and how to run it."""

    path: Path
    index: int
    code: str
    no_run: str | None = None
    continues: bool = False
    until_interrupted: bool = False

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}#{self.index + 1}"


def _examples() -> list[Example]:
    found: list[Example] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for index, m in enumerate(_BLOCK.finditer(text)):
            example = Example(path, index, m["code"])
            for directive in (m["directives"] or "").split(";"):
                name, _, arg = directive.strip().partition(":")
                name = name.strip()
                if name == "no-run":
                    example.no_run = arg.strip() or "no reason given"
                elif name == "continues":
                    example.continues = True
                elif name == "until-interrupted":
                    example.until_interrupted = True
                elif name:
                    raise ValueError(f"{example.id}: unknown example directive {name!r}")
            found.append(example)
    return found


EXAMPLES = _examples()


def _program(example: Example) -> str:
    """The code to run: the block, after the blocks it continues."""
    parts = [example.code]
    same_file = [e for e in EXAMPLES if e.path == example.path]
    current = example
    while current.continues and current.index > 0:
        current = same_file[current.index - 1]
        if current.no_run:
            raise ValueError(f"{example.id} continues {current.id}, which does not run")
        parts.insert(0, current.code)
    return "\n".join(parts)


def _joins_group_with_default_session(code: str) -> bool:
    """A consumer in a group (group.id / group_id and a poll) without a short session."""
    return (
        bool(re.search(r"group[._]id", code))
        and ".poll(" in code
        and not re.search(r"session[._]timeout[._]ms", code)
    )


def _prepare_topics(code: str, bootstrap: str) -> str:
    """Fresh topics for the names the code uses, each with a few records."""
    from kafkaconsumer.admin import KafkaAdminClient
    from kafkaconsumer.producer import KafkaProducer

    names = sorted(set(_TOPIC_USE.findall(code)))
    if not names:
        return code
    fresh = {name: f"{name}-{uuid.uuid4().hex[:10]}" for name in names}
    with KafkaAdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics({t: 3 for t in fresh.values()}, timeout_ms=30_000)
    producer = KafkaProducer({"bootstrap.servers": bootstrap})
    try:
        for topic in fresh.values():
            for i in range(3):
                producer.send(
                    topic, key=f"id-{i}".encode(), value=f"record {i}".encode(), partition=i
                )
        producer.flush(timeout_ms=30_000)
    finally:
        producer.close(timeout_ms=10_000)
    for name, new in fresh.items():
        code = re.sub(rf'"{re.escape(name)}"', f'"{new}"', code)
    return code


def _run(code: str, until_interrupted: bool) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    if not until_interrupted:
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        preexec_fn=default_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    first = ""
    deadline = time.monotonic() + 40
    while not first and proc.poll() is None and time.monotonic() < deadline:
        first = proc.stdout.readline() or ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, first + out, err)


@pytest.mark.integration
@pytest.mark.timeout(150)
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_runs(example: Example, broker: Any) -> None:
    if example.no_run:
        pytest.skip(f"not run: {example.no_run}")
    program = _program(example)
    if broker.is_tansu and "pyspark" in program:
        # Each starts Spark (20-30 s); tests/spark runs the same source on Tansu.
        pytest.skip("starts Spark: tests/spark runs its source on Tansu; run on Apache Kafka")
    if broker.is_tansu and _joins_group_with_default_session(program):
        # Each such join costs about 23 s on Tansu; the Apache Kafka pass runs them.
        pytest.skip(
            "joins a group with the default 45 s session, which Tansu holds for half "
            "of it; run on Apache Kafka"
        )
    code = _prepare_topics(
        program.replace(_PLACEHOLDER, broker.bootstrap_servers), broker.bootstrap_servers
    )
    result = _run(code, example.until_interrupted)
    if example.until_interrupted:
        # Stopped by us: the only complaint allowed is the interrupt itself.
        last = result.stderr.strip().splitlines()[-1:] if result.stderr.strip() else []
        assert result.returncode in (0, -signal.SIGINT, 1), result
        assert not last or last == ["KeyboardInterrupt"], result.stderr
        assert result.stdout.strip(), f"{example.id} printed nothing before it was stopped"
    else:
        assert result.returncode == 0, f"{example.id} failed:\n{result.stderr}"


def test_directives_parse_and_continuations_resolve() -> None:
    assert EXAMPLES, "no examples found"
    for example in EXAMPLES:
        if not example.no_run:
            _program(example)

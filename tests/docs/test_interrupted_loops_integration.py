"""Ctrl-C in the documented poll loops loses nothing: each loop of the README and the guides that
consumes in a group runs as a program, gets SIGINT at a random moment while it consumes, and
must then have committed exactly the records it processed (printed), and exit cleanly."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer, TopicPartition
from tests.consumer.conftest import create_topic, produce, simple_records
from tests.helpers import default_sigint, unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 3
PER_PARTITION = 3000
RUNS = 3

_BLOCK = re.compile(
    r"(?:<!--\s*example:(?P<directives>.*?)-->\s*\n)?```python\n(?P<code>.*?)```", re.S
)


def _documented_loops() -> dict[str, str]:
    """The runnable blocks that consume in a group and stop on SIGINT: ``{id: code}``."""
    found: dict[str, str] = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for index, m in enumerate(_BLOCK.finditer(text)):
            code = m["code"]
            if "no-run" in (m["directives"] or ""):
                continue
            if "signal.SIGINT" in code and ".poll(" in code and "group.id" in code:
                found[f"{path.relative_to(ROOT)}#{index + 1}"] = code
    return found


LOOPS = _documented_loops()


def test_the_documented_loops_are_found() -> None:
    assert {name.partition("#")[0] for name in LOOPS} == {
        "README.md",
        "docs/getting-started.md",
        "docs/porting-java.md",
        "docs/porting-confluent-kafka.md",
    }


def _program(code: str, bootstrap: str, topic: str, group: str) -> str:
    code = code.replace("localhost:9092", bootstrap)
    code = re.sub(r'subscribe\(\["[A-Za-z0-9._-]+"\]', f'subscribe(["{topic}"]', code)
    return re.sub(r'"group\.id": "[A-Za-z0-9._-]+"', f'"group.id": "{group}"', code)


def _committed(bootstrap: str, group: str, topic: str) -> int:
    with KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as c:
        got = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)])
    return sum(om.offset for om in got.values() if om is not None)


def _run_and_interrupt(program: str, delay_s: float) -> tuple[int, str, str]:
    """Run ``program``; SIGINT it ``delay_s`` after its first record line. Returns the exit code,
    stdout and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1"),
        preexec_fn=default_sigint,
        bufsize=0,  # unbuffered: readline() below must not take output communicate() reads
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # blocks until the loop handles its first record
    time.sleep(delay_s)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    return proc.returncode, (first + out).decode(), err.decode()


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_sigint_at_a_random_moment_commits_what_was_processed(broker: Any, loop: str) -> None:
    if broker.is_tansu:
        pytest.skip("joins groups with the default 45 s session, which Tansu holds; Apache Kafka")
    bootstrap = str(broker.bootstrap_servers)
    topic = create_topic(bootstrap, PARTITIONS, prefix="ctrlc")
    produce(bootstrap, topic, simple_records(PARTITIONS, PER_PARTITION))
    rng = random.Random(loop)
    for run in range(RUNS):
        group = unique_name("ctrlc")
        code, out, err = _run_and_interrupt(
            _program(LOOPS[loop], bootstrap, topic, group), rng.uniform(0.0, 0.3)
        )
        # -SIGINT: the signal came as the finished program exited, when Python has put the
        # default handler back; the loop had ended and committed by then.
        assert code in (0, -signal.SIGINT) and not err.strip(), f"run {run}: exit {code}\n{err}"
        processed = len(out.splitlines())
        assert processed > 0
        assert _committed(bootstrap, group, topic) == processed, f"run {run}"

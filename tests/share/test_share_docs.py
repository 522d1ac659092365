"""docs/share-groups.md's example runs as written against Apache Kafka 4.4."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.protocol import ApiKey
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_share_groups_page_example_runs(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/share-groups.md's example runs as written against the session broker: one job is
    released once and comes back, every job ends accepted."""
    if not broker.is_apache or ApiKey.SHARE_FETCH not in broker.api_versions:
        pytest.skip("share groups need Apache Kafka 4.2 or newer")
    text = (Path(__file__).resolve().parents[2] / "docs" / "share-groups.md").read_text()
    # The page's example is its first Python block; the later ones are fragments.
    code = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    code = code.replace("localhost:9092", broker.bootstrap_servers)
    code = code.replace("jobs-docs", unique_name("jobs-docs"))
    code = code.replace("workers-docs", unique_name("workers-docs"))
    exec(compile(code, "docs/share-groups.md", "exec"), {})
    assert capsys.readouterr().out.strip() == str([b"job-%d" % i for i in range(5)])

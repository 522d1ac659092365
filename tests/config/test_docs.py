"""docs/configuration.md must match the key definitions it is generated from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_configuration_doc_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_configuration.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_consumer_key_is_documented() -> None:
    from kafkaconsumer.config import ConsumerConfig

    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [name for name in ConsumerConfig.config_names() if f"| `{name}` |" not in text]
    assert missing == []

"""Helpers for the command-line tests: run ``python -m kafkaconsumer`` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Run:
    """One finished command: exit status, stdout and stderr."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self) -> str:
        return f"Run(code={self.code}, out={self.out!r}, err={self.err!r})"


def run_cli(*args: str, timeout: float = 60.0, **env: str) -> Run:
    """``python -m kafkaconsumer ARGS`` from the checkout (so its code is imported)."""
    environment = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    environment.update(env)
    environment["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "kafkaconsumer", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
    )
    return Run(proc)


@pytest.fixture
def cli() -> Any:
    """The :func:`run_cli` function."""
    return run_cli

"""Run the atheris fuzz target (tests/chaos/atheris_fuzz.py) for a bounded number of inputs.

atheris is in the ``fuzz`` extra, not ``dev``: it ships wheels for few platforms and Pythons,
and a source build needs clang. Without it this test skips with that reason.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)


@pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None,
    reason="atheris is not installed (pip install '.[fuzz]')",
)
def test_atheris_finds_no_crash(tmp_path: object) -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.chaos.atheris_fuzz",
            "-runs=10000",
            "-max_len=2048",
            "-rss_limit_mb=1024",
            "-timeout=10",
            "-seed=1",
            f"-artifact_prefix={tmp_path}/",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=110,
    )
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail
    assert "Done 10000 runs" in tail, tail

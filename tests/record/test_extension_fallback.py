"""Without the compiled decoder the package still imports, and says so loudly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kafkaconsumer

PACKAGE = Path(kafkaconsumer.__file__).resolve().parent
PROBE = "import kafkaconsumer.record as r; print('USING_EXTENSION', r.USING_EXTENSION)"


def _copy_without_extension(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__")
    shutil.copytree(PACKAGE, dest / "kafkaconsumer", ignore=ignore)
    return dest


def _run(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "KAFKACONSUMER_NO_EXTENSIONS"}
    full_env.update(env)
    full_env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", PROBE],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_missing_extension_warns_with_cause_cost_and_fix(tmp_path: Path) -> None:
    root = _copy_without_extension(tmp_path)
    proc = _run(root)
    assert proc.returncode == 0, proc.stderr
    assert "USING_EXTENSION False" in proc.stdout
    assert "RuntimeWarning" in proc.stderr
    assert "was not built when kafkaconsumer was installed" in proc.stderr
    assert "17x slower" in proc.stderr and "C compiler" in proc.stderr
    assert "circular import" not in proc.stderr


def test_choosing_the_pure_python_decoder_is_silent(tmp_path: Path) -> None:
    root = _copy_without_extension(tmp_path)
    proc = _run(root, KAFKACONSUMER_NO_EXTENSIONS="1")
    assert proc.returncode == 0, proc.stderr
    assert "USING_EXTENSION False" in proc.stdout
    assert "RuntimeWarning" not in proc.stderr


def test_built_extension_is_used_without_warning() -> None:
    pytest.importorskip("kafkaconsumer.record._crecords")
    proc = _run(PACKAGE.parent)
    assert "USING_EXTENSION True" in proc.stdout
    assert "RuntimeWarning" not in proc.stderr

"""The documentation site builds with ``mkdocs build --strict``, and the benchmark plot is made
from the recorded run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_site_builds_strict(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--quiet",
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        env={
            "NO_MKDOCS_2_WARNING": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PYTHONPATH": str(ROOT),
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "site" / "api" / "index.html").exists()
    html = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "commit_sync" in html  # the API reference came from the docstrings


@pytest.mark.timeout(120)
def test_benchmark_plot_from_the_recorded_run(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "benchmarks/plot.py", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        env={"MPLCONFIGDIR": str(tmp_path / "mpl"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    pngs = list(tmp_path.glob("*.png"))
    assert pngs and all(p.stat().st_size > 10_000 for p in pngs)
    assert "| 100 | 8 | none | kafkaconsumer |" in proc.stdout
    # Every recorded result has its plot in the docs.
    for result in (ROOT / "benchmarks" / "results").glob("*.json"):
        assert (ROOT / "docs" / "img" / f"{result.stem}.png").exists(), result.name

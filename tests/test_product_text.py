"""The repository speaks of the product, not of how it was built: no documentation page,
docstring, comment, test name or recorded result refers to the project's issues, its work
sessions or the engineers who did the work.

The patterns are conservative: references to the outside world (``KIP-848``, ``KAFKA-12345``,
``SPARK-34652``, RFC sections) and the other meanings of "session" (a fetch session, a session
timeout such as ``session 10 s``, the test session's broker) do not match.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Where the product's text lives, relative to the repository root.
PLACES = (
    "kafkaconsumer",
    "tests",
    "benchmarks",
    "tools",
    "docs",
    "spark",
    ".ci",
    "README.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
    "pyproject.toml",
    "mkdocs.yml",
    "setup.py",
)
#: Text files by suffix; files without a suffix (the scripts in tools/ and .ci/) are read too.
SUFFIXES = {
    ".py",
    ".pyx",
    ".pxd",
    ".pyi",
    ".md",
    ".toml",
    ".yml",
    ".yaml",
    ".json",
    ".txt",
    ".cfg",
    "",
}
SKIP_PARTS = {"__pycache__", "build", ".mypy_cache", ".pytest_cache", "site"}

#: What refers to the project's own history: an issue by number ("issue 11", "issue #12"),
#: a numbered or ordinal work session ("session 7", "sessions 4 to 6", "the third session"),
#: a development or helper session, rounds of work, and engineers.
PATTERNS = (
    re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE),
    re.compile(r"\bsessions?\s+\d+\b(?!\s*(?:s|ms|seconds?)\b)", re.IGNORECASE),
    re.compile(
        r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|previous)"
        r"(?:\s+development|\s+work)?\s+session\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:development|work|helper)\s+sessions?\b", re.IGNORECASE),
    re.compile(r"\brounds?\s+of\s+work\b", re.IGNORECASE),
    re.compile(r"\bengineers?\b", re.IGNORECASE),
)


def _files() -> Iterator[Path]:
    this = Path(__file__).resolve()
    for place in PLACES:
        top = ROOT / place
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in paths:
            if not path.is_file() or path.resolve() == this:
                continue
            if SKIP_PARTS.intersection(path.relative_to(ROOT).parts):
                continue
            if path.suffix in SUFFIXES:
                yield path


def _findings() -> list[str]:
    found = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for pattern in PATTERNS:
                if m := pattern.search(line):
                    rel = path.relative_to(ROOT).as_posix()
                    found.append(f"{rel}:{number}: {m.group(0)!r} in {line.strip()[:100]}")
    return found


def test_no_text_refers_to_issues_sessions_or_engineers() -> None:
    found = _findings()
    assert not found, "text that tells how the project was built:\n" + "\n".join(found)


def test_the_patterns_spare_references_to_the_outside_world() -> None:
    """KIP and JIRA numbers, session timeouts and fetch sessions are facts about Kafka, not
    about this project's history, and do not match; issue and session numbers do."""
    fine = (
        "KIP-848 and KAFKA-12345 and SPARK-34652",
        "partition 5 s < session 10 s",
        "the fetch session's epoch; session.timeout.ms 45000; the session's broker",
        "a helper function; RFC 7677 section 3",
    )
    bad = (
        "as issue 14 asks",
        "see issue #3",
        "measured in session 7",
        "sessions 4 to 6",
        "the third session's fetcher",
        "a development session",
        "the lead engineer's run",
    )
    for text in fine:
        assert not any(p.search(text) for p in PATTERNS), text
    for text in bad:
        assert any(p.search(text) for p in PATTERNS), text

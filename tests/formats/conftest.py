"""Fixtures of the schema-registry tests: a real Apicurio Registry for the session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import apicurio_registry


@pytest.fixture(scope="session")
def registry() -> Iterator[apicurio_registry.ApicurioRegistry]:
    """Apicurio Registry on a free loopback port (built with Maven on first use, then cached)."""
    missing = apicurio_registry.missing_tools()
    if missing:
        pytest.skip(f"needs Apicurio Registry: {missing}")
    with apicurio_registry.ApicurioRegistry() as running:
        yield running

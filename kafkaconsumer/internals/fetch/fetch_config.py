"""The fetch-related configuration of a consumer (Java ``FetchConfig``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kafkaconsumer.config import config_default, config_value

__all__ = ["FetchConfig"]


class FetchConfig(NamedTuple):
    """The fetch-related configuration, read once from the consumer config.

    Thread-safety: immutable (a NamedTuple).
    """

    min_bytes: int = config_default("fetch.min.bytes")
    max_bytes: int = config_default("fetch.max.bytes")
    max_wait_ms: int = config_default("fetch.max.wait.ms")
    fetch_size: int = config_default("max.partition.fetch.bytes")
    max_poll_records: int = config_default("max.poll.records")
    check_crcs: bool = config_default("check.crcs")
    read_committed: bool = config_default("isolation.level") == "read_committed"
    client_rack: str = config_default("client.rack")
    metadata_max_age_ms: int = config_default("metadata.max.age.ms")
    retry_backoff_ms: int = config_default("retry.backoff.ms")
    request_timeout_ms: int = config_default("request.timeout.ms")
    fetch_sessions: bool = True
    arrow_decode_threads: int = config_default("arrow.decode.threads")
    arrow_poll_max_bytes: int = config_default("arrow.poll.max.bytes")

    @classmethod
    def from_config(cls, config: Mapping[str, Any], fetch_sessions: bool = True) -> FetchConfig:
        """Pick the keys out of a Java-keyed config mapping (a missing key takes the
        ConsumerConfig default)."""
        return cls(
            min_bytes=int(config_value(config, "fetch.min.bytes")),
            max_bytes=int(config_value(config, "fetch.max.bytes")),
            max_wait_ms=int(config_value(config, "fetch.max.wait.ms")),
            fetch_size=int(config_value(config, "max.partition.fetch.bytes")),
            max_poll_records=int(config_value(config, "max.poll.records")),
            check_crcs=bool(config_value(config, "check.crcs")),
            read_committed=config_value(config, "isolation.level") == "read_committed",
            client_rack=str(config_value(config, "client.rack") or ""),
            metadata_max_age_ms=int(config_value(config, "metadata.max.age.ms")),
            retry_backoff_ms=int(config_value(config, "retry.backoff.ms")),
            request_timeout_ms=int(config_value(config, "request.timeout.ms")),
            fetch_sessions=fetch_sessions,
            arrow_decode_threads=int(config_value(config, "arrow.decode.threads")),
            arrow_poll_max_bytes=int(config_value(config, "arrow.poll.max.bytes")),
        )

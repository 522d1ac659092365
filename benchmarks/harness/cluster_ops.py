"""Small operations on a running cluster that the benchmarks and the tests share."""

from __future__ import annotations

import uuid

__all__ = ["set_group_config", "unique_name"]


def unique_name(prefix: str = "t") -> str:
    """A topic or group name no other run on the same cluster uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def set_group_config(bootstrap: str, group: str, settings: dict[str, str]) -> None:
    """Set broker-side configs of one group (KIP-848 timers such as
    ``consumer.session.timeout.ms``), through librdkafka's admin client."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)

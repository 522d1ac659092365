"""The choice of a consumer's group member, made once (Java's ``ConsumerDelegateCreator``).

Java picks ``ClassicKafkaConsumer`` or ``AsyncKafkaConsumer`` from ``group.protocol``; here the
facade is one class and the member is what differs, so this picks the member class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkaconsumer.internals.group.consumer_coordinator import ConsumerCoordinator
    from kafkaconsumer.internals.group.consumer_protocol_coordinator import (
        ConsumerProtocolCoordinator,
    )

__all__ = ["consumer_member_class"]


def consumer_member_class(
    config: Mapping[str, Any],
) -> type[ConsumerCoordinator] | type[ConsumerProtocolCoordinator]:
    """The consumer's group member class for ``group.protocol`` (classic or consumer).

    Modules load on demand: a consumer without a group never imports the group machinery.
    """
    from kafkaconsumer.config import config_value

    if str(config_value(config, "group.protocol")).lower() == "consumer":
        from kafkaconsumer.internals.group.consumer_protocol_coordinator import (
            ConsumerProtocolCoordinator,
        )

        return ConsumerProtocolCoordinator
    from kafkaconsumer.internals.group.consumer_coordinator import ConsumerCoordinator

    return ConsumerCoordinator

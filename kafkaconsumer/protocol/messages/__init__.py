"""The registry of message definitions: every :class:`~kafkaconsumer.protocol.schema.Api` we
implement, collected from the definition modules (``core``, ``groups``, ``misc``, ``share``,
``telemetry``).

``APIS`` maps the api key to its definition; ``ALL_APIS`` lists them in key order.
"""

from __future__ import annotations

from kafkaconsumer.protocol.messages import core, groups, misc, share, telemetry
from kafkaconsumer.protocol.schema import Api

__all__ = ["APIS", "ALL_APIS"]

#: Definitions by api key.
APIS: dict[int, Api] = {}


def _register(apis: list[Api]) -> None:
    """Add definitions to the registry; a key defined twice is an error."""
    for api in apis:
        if api.key in APIS:
            raise ValueError(
                f"api key {api.key} defined twice ({APIS[api.key].name} and {api.name})"
            )
        APIS[api.key] = api


_register(core.APIS)
_register(groups.APIS)
_register(misc.APIS)
_register(share.APIS)
_register(telemetry.APIS)

#: All definitions, ascending by key.
ALL_APIS: list[Api] = [APIS[k] for k in sorted(APIS)]

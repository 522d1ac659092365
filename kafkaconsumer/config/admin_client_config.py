"""The admin client's keys and :class:`AdminClientConfig` (Java ``AdminClientConfig``)."""

from __future__ import annotations

from kafkaconsumer.config.abstract_config import AbstractConfig, _finish
from kafkaconsumer.config.common_client_configs import _NON_NEGATIVE, common_keys
from kafkaconsumer.config.config_def import ConfigKey, L, M, T, _k


def admin_keys() -> list[ConfigKey]:
    """The keys of :class:`AdminClientConfig`: the common ones and the admin client's own."""
    return common_keys("admin") + [
        _k(
            "default.api.timeout.ms",
            T.INT,
            60000,
            "Timeout of admin calls that take no explicit timeout.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "bootstrap.controllers",
            T.LIST,
            (),
            "Java's admin client can talk to the KRaft controller quorum instead of brokers.",
            L,
            unsupported=(
                "this admin client talks to brokers only; set bootstrap.servers to the brokers"
            ),
        ),
        _k(
            "retries",
            T.INT,
            2147483647,
            "How often a failed admin request is retried (within its timeout).",
            L,
            _NON_NEGATIVE,
        ),
    ]


class AdminClientConfig(AbstractConfig):
    """Configuration of :class:`~kafkaconsumer.admin.KafkaAdminClient` (Java ``AdminClientConfig``).

    Thread-safety: immutable after construction; safe to share between threads.
    """

    _CLIENT_ID_PREFIX = "adminclient"


_finish(AdminClientConfig, admin_keys())

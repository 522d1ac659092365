"""Turning ``bootstrap.servers`` into addresses to connect to (Java's ``ClientUtils``):
parsing the list, and resolving each name once when the client is built, as
``client.dns.lookup`` says."""

from __future__ import annotations

import logging
import socket
from typing import Any

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.network.connection import host_for_lookup

logger = logging.getLogger(__name__)

__all__ = ["parse_bootstrap_servers", "resolve_bootstrap_servers"]


def parse_bootstrap_servers(value: Any) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` or a list of ``"host:port"`` -> ``[(host, port), ...]``.

    IPv6 literals are written ``[::1]:9092``. Raises :class:`ConfigError` on a bad entry.
    """
    if value is None:
        raise ConfigError("bootstrap.servers is required")
    items = value.split(",") if isinstance(value, str) else list(value)
    result: list[tuple[str, int]] = []
    for raw in items:
        entry = str(raw).strip()
        if not entry:
            continue
        for scheme in ("PLAINTEXT://", "SSL://", "SASL_PLAINTEXT://", "SASL_SSL://"):
            if entry.upper().startswith(scheme):
                entry = entry[len(scheme) :]
        if entry.startswith("["):
            host, sep, rest = entry[1:].partition("]")
            port_s = rest[1:] if rest.startswith(":") else ""
        else:
            host, sep, port_s = entry.rpartition(":")
        if not host or not port_s.isdigit() or not 0 < int(port_s) < 65536:
            raise ConfigError(f"bootstrap.servers: invalid address {raw!r} (want host:port)")
        result.append((host, int(port_s)))
    if not result:
        raise ConfigError("bootstrap.servers is empty")
    return result


def resolve_bootstrap_servers(
    addresses: list[tuple[str, int]], dns_lookup: str
) -> list[tuple[str, int]]:
    """Check that ``bootstrap.servers`` resolve, as Java's client does when it is built.

    A name that does not resolve is dropped with a WARNING; when none is left a
    :class:`ConfigError` names them all. With ``client.dns.lookup`` =
    ``resolve_canonical_bootstrap_servers_only`` each name becomes the canonical (reverse
    looked-up) names of its addresses, so that e.g. a Kerberos principal matches the broker.
    """
    out: list[tuple[str, int]] = []
    failures: list[str] = []
    for host, port in addresses:
        try:
            infos = socket.getaddrinfo(host_for_lookup(host), port, 0, socket.SOCK_STREAM)
        except OSError as exc:
            logger.warning(
                "bootstrap.servers: cannot resolve %s:%s (%s); skipping it", host, port, exc
            )
            failures.append(f"{host}:{port} ({exc})")
            continue
        if dns_lookup != "resolve_canonical_bootstrap_servers_only":
            out.append((host, port))
            continue
        for info in infos:
            ip = str(info[4][0])
            try:
                name = socket.gethostbyaddr(ip)[0]
            except OSError:
                name = ip  # Java's getCanonicalHostName falls back to the address too
            if (name, port) not in out:
                out.append((name, port))
    if not out:
        raise ConfigError(
            "no resolvable bootstrap urls given in bootstrap.servers: " + ", ".join(failures)
        )
    return out

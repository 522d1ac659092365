"""Building the client's ``ssl.SSLContext`` from Java-named ``ssl.*`` keys.

Accepted keys (PEM files and strings only; Java KeyStores are not readable from Python):

* ``ssl.context``: a ready ``ssl.SSLContext`` supplied by the user; every other key is ignored.
* trust: ``ssl.truststore.location`` (a PEM file of CA certificates) or ``ssl.truststore.certificates``
  (PEM text), also ``ssl.ca.location``; none of them -> the system's default CAs.
* client certificate: ``ssl.keystore.location`` (a PEM file with the certificate chain and the
  key) or ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` (PEM text), also
  ``ssl.certificate.location`` + ``ssl.key.location``; ``ssl.key.password`` decrypts the key.
* ``ssl.endpoint.identification.algorithm``: ``"https"`` (default) verifies the broker's host
  name; ``""`` or None turns that check off (the certificate chain is still verified).
* ``ssl.enabled.protocols``: the TLS versions allowed; ``ssl.protocol`` (Java's SSLContext
  protocol) bounds the newest of them; ``ssl.cipher.suites``.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any

from kafkaconsumer.config import config_default
from kafkaconsumer.errors import ConfigError
from kafkaconsumer.network.sasl import secret_text as _secret_text  # one helper for SASL and TLS

logger = logging.getLogger(__name__)

__all__ = ["build_ssl_context", "hostname_verification"]

_TLS_VERSIONS = {
    "TLSV1": ssl.TLSVersion.TLSv1,
    "TLSV1.1": ssl.TLSVersion.TLSv1_1,
    "TLSV1.2": ssl.TLSVersion.TLSv1_2,
    "TLSV1.3": ssl.TLSVersion.TLSv1_3,
}


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v).strip() for v in value if str(v).strip()]


def _newest_version(protocol: Any) -> ssl.TLSVersion | None:
    """The newest TLS version an ``ssl.protocol`` allows, or None for no bound.

    Java builds its SSLContext for ``ssl.protocol``: a TLSv1.2 context keeps connections off
    TLSv1.3 even when ``ssl.enabled.protocols`` lists it, while TLSv1.3 (the default) and the
    generic TLS bound nothing.
    """
    if protocol is None:
        return None
    name = str(protocol).strip().upper()
    if name in ("", "TLS", "TLSV1.3"):
        return None
    version = _TLS_VERSIONS.get(name)
    if version is None:
        raise ConfigError(f"ssl.protocol {protocol!r} is not a TLS version this client knows")
    return version


def hostname_verification(config: Mapping[str, Any]) -> bool:
    """True when ``ssl.endpoint.identification.algorithm`` asks for the host name check."""
    key = "ssl.endpoint.identification.algorithm"
    # None, as an empty string, turns the check off: only a missing key takes the default.
    algo = config[key] if key in config else config_default(key)
    if algo is None or str(algo).strip() == "":
        return False
    if str(algo).strip().lower() != "https":
        raise ConfigError(
            f"ssl.endpoint.identification.algorithm {algo!r} is not supported "
            "(use 'https' or an empty string)"
        )
    return True


def _check_pem_file(path: str, key: str) -> None:
    if not os.path.isfile(path):
        raise ConfigError(f"{key}: no such file {path!r}")
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if b"-----BEGIN" not in head:
        raise ConfigError(
            f"{key}: {path!r} is not a PEM file (Java JKS/PKCS12 stores are not "
            "supported; convert them to PEM)"
        )


def build_ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """An ``SSLContext`` for connecting to brokers, from the ``ssl.*`` keys of ``config``."""
    user_ctx = config.get("ssl.context")
    if user_ctx is not None:
        if not isinstance(user_ctx, ssl.SSLContext):
            raise ConfigError("ssl.context must be an ssl.SSLContext")
        return user_ctx
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.check_hostname = hostname_verification(config)

    protocols = _as_list(config.get("ssl.enabled.protocols"))
    versions = [_TLS_VERSIONS[p.upper()] for p in protocols if p.upper() in _TLS_VERSIONS]
    if protocols and not versions:
        raise ConfigError(f"ssl.enabled.protocols {protocols!r}: no known TLS version")
    newest = _newest_version(config.get("ssl.protocol"))
    if newest is not None:
        capped = [v for v in versions if v <= newest]
        if versions and not capped:
            raise ConfigError(
                f"ssl.protocol={config.get('ssl.protocol')} leaves none of ssl.enabled.protocols "
                f"{protocols!r}: Java's SSLContext of that protocol never uses a newer version; "
                "raise ssl.protocol (TLSv1.3) or enable an older version"
            )
        versions = capped
    if versions:
        ctx.minimum_version = min(versions)
        ctx.maximum_version = max(versions)
    else:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if newest is not None:
            ctx.minimum_version = min(ssl.TLSVersion.TLSv1_2, newest)
            ctx.maximum_version = newest

    ciphers = _as_list(config.get("ssl.cipher.suites"))
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.cipher.suites: no usable cipher in {ciphers!r}") from exc

    cafile = config.get("ssl.truststore.location") or config.get("ssl.ca.location")
    cadata = config.get("ssl.truststore.certificates")
    if cafile:
        _check_pem_file(str(cafile), "ssl.truststore.location")
        try:
            ctx.load_verify_locations(cafile=str(cafile))
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.truststore.location {cafile!r}: {exc}") from exc
    if cadata:
        try:
            ctx.load_verify_locations(cadata=str(cadata))
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.truststore.certificates: invalid PEM ({exc})") from exc
    if not cafile and not cadata:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)

    password = _secret_text(config.get("ssl.key.password"))
    certfile = config.get("ssl.keystore.location") or config.get("ssl.certificate.location")
    keyfile = config.get("ssl.key.location")
    chain_pem = config.get("ssl.keystore.certificate.chain")
    key_pem = _secret_text(config.get("ssl.keystore.key"))
    if certfile:
        _check_pem_file(str(certfile), "ssl.keystore.location")
        _load_chain(ctx, str(certfile), str(keyfile) if keyfile else None, password)
    elif chain_pem and key_pem:
        # The ssl module only loads certificates from files; a private temporary file that is
        # removed at once keeps the key off the disk for no longer than the load takes.
        fd, path = tempfile.mkstemp(prefix="kc-keystore-", suffix=".pem")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(str(chain_pem).strip() + "\n" + key_pem.strip() + "\n")
            _load_chain(ctx, path, None, password)
        finally:
            os.unlink(path)
    elif chain_pem or key_pem:
        raise ConfigError("ssl.keystore.certificate.chain and ssl.keystore.key go together")
    return ctx


def _load_chain(
    ctx: ssl.SSLContext, certfile: str, keyfile: str | None, password: str | None
) -> None:
    try:
        ctx.load_cert_chain(certfile, keyfile, password=password)
    except ssl.SSLError as exc:
        # The reason only, never the password.
        raise ConfigError(
            f"cannot load the client certificate/key ({exc.reason or 'invalid'}); "
            "check the files and ssl.key.password"
        ) from None

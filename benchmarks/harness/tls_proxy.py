"""A TLS-terminating proxy for tests, and the certificates it needs.

The Tansu broker cannot serve TLS, so the TLS tests put this proxy in front of it: clients speak
TLS to the proxy, which forwards plaintext to the broker (start the broker with its advertised
listener pointing at the proxy). :func:`make_pki` writes a throw-away CA and server certificates
(good, expired, wrong host name) with the ``cryptography`` package.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from benchmarks.harness.proxy import FaultProxy

__all__ = ["Pki", "make_pki", "TlsProxy", "server_context"]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey, password: bytes | None = None) -> bytes:
    enc: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    cn: str,
    dns: list[str],
    ips: list[str],
    expired: bool = False,
    client: bool = False,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    if expired:
        start, end = now - datetime.timedelta(days=10), now - datetime.timedelta(days=1)
    else:
        start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]
            ),
            critical=False,
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


@dataclass
class Pki:
    """Paths of the PEM files :func:`make_pki` wrote."""

    ca: str  # the trusted CA
    other_ca: str  # an unrelated CA (the "wrong CA" case)
    server_cert: str  # valid for localhost / 127.0.0.1
    server_key: str
    expired_cert: str  # signed by ca, expired
    expired_key: str
    wronghost_cert: str  # signed by ca, valid only for broker.invalid
    wronghost_key: str
    client_cert: str  # client certificate (mutual TLS), signed by ca
    client_key: str  # encrypted with client_key_password
    client_key_password: str = "s3cret-key-pass"


def make_pki(directory: str) -> Pki:
    """Write a CA, server/expired/wrong-host/client certificates into ``directory``."""

    def write(name: str, data: bytes) -> str:
        path = os.path.join(directory, name)
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    def cert_pem(c: x509.Certificate) -> bytes:
        return c.public_bytes(serialization.Encoding.PEM)

    ca, ca_key = _ca("kafkaconsumer test CA")
    other, _ = _ca("some other CA")
    good, good_key = _leaf(ca, ca_key, "localhost", ["localhost"], ["127.0.0.1"])
    old, old_key = _leaf(ca, ca_key, "localhost", ["localhost"], ["127.0.0.1"], expired=True)
    wrong, wrong_key = _leaf(ca, ca_key, "broker.invalid", ["broker.invalid"], [])
    cli, cli_key = _leaf(ca, ca_key, "client", [], [], client=True)
    pki = Pki(
        ca=write("ca.pem", cert_pem(ca)),
        other_ca=write("other-ca.pem", cert_pem(other)),
        server_cert=write("server.pem", cert_pem(good)),
        server_key=write("server.key", _pem_key(good_key)),
        expired_cert=write("expired.pem", cert_pem(old)),
        expired_key=write("expired.key", _pem_key(old_key)),
        wronghost_cert=write("wronghost.pem", cert_pem(wrong)),
        wronghost_key=write("wronghost.key", _pem_key(wrong_key)),
        client_cert=write("client.pem", cert_pem(cli)),
        client_key="",
    )
    pki.client_key = write("client.key", _pem_key(cli_key, pki.client_key_password.encode()))
    return pki


def server_context(certfile: str, keyfile: str, client_ca: str | None = None) -> ssl.SSLContext:
    """A server-side context; with ``client_ca`` the client must present a certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certfile, keyfile)
    if client_ca:
        ctx.load_verify_locations(client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class TlsProxy(FaultProxy):
    """A :class:`FaultProxy` that terminates TLS with the given certificate.

    Thread-safety: as FaultProxy.
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        certfile: str,
        keyfile: str,
        *,
        client_ca: str | None = None,
        listen_host: str = "127.0.0.1",
    ) -> None:
        super().__init__(
            target_host,
            target_port,
            listen_host=listen_host,
            ssl_context=server_context(certfile, keyfile, client_ca),
        )

    def set_certificate(self, certfile: str, keyfile: str) -> None:
        """Serve another certificate to new connections."""
        assert self._ssl_context is not None
        self._ssl_context.load_cert_chain(certfile, keyfile)

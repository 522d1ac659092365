"""The ``ssl`` names a TLS connection needs, bound on first use (the TLS side of Java's
``SslTransportLayer``).

Until a TLS connection is built, each name stands for :class:`_NoTls`, an exception nothing
raises, so that the except clauses naming them cost a plaintext client no import of ``ssl``.
Read them through the module (``ssl_transport_layer.SSLError``): :func:`load_ssl` rebinds them.
"""

from __future__ import annotations

from typing import Any


class _NoTls(Exception):
    """Stands for the ``ssl`` module's exception and socket classes until a TLS connection is
    made: ``ssl`` takes ~7 ms to import, a plaintext client never needs it, and the except
    clauses naming them are reached by every would-block read (BlockingIOError).

    Thread-safety: never instantiated; the names bound to it change once, under the network
    lock, when the first TLS connection is built.
    """


# Any: each is the ssl class of that name once load_ssl ran. Written by load_ssl only, under
# the network lock (a connection being built); read anywhere (a single module-global read).
SSLError: Any = _NoTls
SSLWantReadError: Any = _NoTls
SSLWantWriteError: Any = _NoTls
SSLCertVerificationError: Any = _NoTls
SSLSocket: Any = _NoTls


def load_ssl() -> None:
    """Bind the ``ssl`` names above (a TLS connection is being made)."""
    global SSLError, SSLWantReadError, SSLWantWriteError, SSLCertVerificationError
    global SSLSocket
    import ssl

    SSLError = ssl.SSLError
    SSLWantReadError = ssl.SSLWantReadError
    SSLWantWriteError = ssl.SSLWantWriteError
    SSLCertVerificationError = ssl.SSLCertVerificationError
    SSLSocket = ssl.SSLSocket

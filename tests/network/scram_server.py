"""A server side of SCRAM (RFC 5802) for tests: it checks the client's proof the way a broker
does, independently of the client code under test."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os


class ScramServer:
    """Verifies one SCRAM exchange for a user whose password the server knows."""

    def __init__(
        self,
        hash_name: str,
        password: str,
        iterations: int = 4096,
        salt: bytes | None = None,
        server_nonce: str | None = None,
    ) -> None:
        self.hash_name = hash_name
        self.salt = salt or os.urandom(16)
        self.iterations = iterations
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), self.salt, iterations)
        client_key = hmac.new(salted, b"Client Key", hash_name).digest()
        self.stored_key = hashlib.new(hash_name, client_key).digest()
        self.server_key = hmac.new(salted, b"Server Key", hash_name).digest()
        self.server_nonce = server_nonce or base64.b64encode(os.urandom(18)).decode()
        self.client_first_bare = ""
        self.server_first = ""
        self.username = ""

    def first(self, client_first: bytes) -> bytes:
        text = client_first.decode()
        assert text.startswith("n,,"), text
        self.client_first_bare = text[3:]
        attrs = dict(p.split("=", 1) for p in self.client_first_bare.split(","))
        self.username = attrs["n"]
        nonce = attrs["r"] + self.server_nonce
        self.server_first = (
            f"r={nonce},s={base64.b64encode(self.salt).decode()},i={self.iterations}"
        )
        return self.server_first.encode()

    def final(self, client_final: bytes) -> tuple[bool, bytes]:
        """(proof ok, server-final message)."""
        text = client_final.decode()
        without_proof, _, proof_b64 = text.rpartition(",p=")
        auth = ",".join((self.client_first_bare, self.server_first, without_proof)).encode()
        signature = hmac.new(self.stored_key, auth, self.hash_name).digest()
        proof = base64.b64decode(proof_b64)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        ok = hmac.compare_digest(hashlib.new(self.hash_name, client_key).digest(), self.stored_key)
        if not ok:
            return False, b"e=invalid-proof"
        server_sig = hmac.new(self.server_key, auth, self.hash_name).digest()
        return True, b"v=" + base64.b64encode(server_sig)

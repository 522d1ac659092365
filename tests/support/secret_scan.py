"""A pytest plugin that fails a security test whose logs or errors show a secret.

Every secret a test hands the library passes through one of its wrappers (``config.Password``
for password-typed keys such as ``sasl.jaas.config``, ``sasl.password``, ``ssl.key.password``;
``sasl.Secret`` for SASL credentials and OAuth tokens). The plugin records the value each time
one is built, for the whole session. During a test of the security suite (a module whose path
mentions sasl, ssl, tls, auth, oauth, scram, security or secret) it

* captures every ``kafkaconsumer`` log record at DEBUG, with its formatted traceback, and
* checks the message of every :class:`~kafkaconsumer.errors.KafkaError` built,

and fails the test when a recorded secret shows up in either, naming the logger or the error
type (never the secret). Values shorter than 8 characters are not scanned: they match ordinary
words too often to mean anything.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["SECURITY_MODULE", "recorded_secrets"]

SECURITY_MODULE = re.compile(r"sasl|ssl|tls|auth|oauth|scram|security|secret", re.IGNORECASE)
_MIN_LEN = 8

_lock = threading.Lock()
_secrets: set[str] = set()


def recorded_secrets() -> frozenset[str]:
    """Every secret value the library has been given in this session."""
    with _lock:
        return frozenset(_secrets)


def _record(value: object) -> None:
    if isinstance(value, str) and len(value) >= _MIN_LEN:
        with _lock:
            _secrets.add(value)


def _leaks(text: str) -> bool:
    return any(s in text for s in recorded_secrets())


def _wrap_init(cls: type) -> None:
    original = cls.__init__  # type: ignore[misc]

    def __init__(self: Any, value: Any, *args: Any, **kwargs: Any) -> None:
        _record(value)
        original(self, value, *args, **kwargs)

    __init__.__doc__ = original.__doc__
    cls.__init__ = __init__  # type: ignore[misc]


def pytest_configure(config: pytest.Config) -> None:
    """Record secrets from the start of the session."""
    from kafkaconsumer.config import Password
    from kafkaconsumer.network.sasl import Secret

    _wrap_init(Password)
    _wrap_init(Secret)


class _Scanner(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.findings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += logging.Formatter().formatException(record.exc_info)
        except Exception:  # a record that cannot format is not ours to judge here
            return
        if _leaks(text):
            self.findings.append(f"a {record.levelname} record of {record.name}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Scan the logs and errors of a security-suite test for recorded secrets."""
    if not SECURITY_MODULE.search(item.nodeid.split("::", 1)[0]):
        return (yield)
    from kafkaconsumer.errors import KafkaError

    scanner = _Scanner()
    lib = logging.getLogger("kafkaconsumer")
    old_level = lib.level
    lib.addHandler(scanner)
    lib.setLevel(logging.DEBUG)
    had_init = "__init__" in KafkaError.__dict__
    old_init = KafkaError.__init__

    def checked_init(self: Any, *args: Any, **kwargs: Any) -> None:
        old_init(self, *args, **kwargs)
        if any(isinstance(a, str) and _leaks(a) for a in args):
            scanner.findings.append(f"the message of a {type(self).__name__}")

    KafkaError.__init__ = checked_init  # type: ignore[method-assign]
    try:
        result = yield
    finally:
        if had_init:
            KafkaError.__init__ = old_init  # type: ignore[method-assign]
        else:
            del KafkaError.__init__
        lib.removeHandler(scanner)
        lib.setLevel(old_level)
    if scanner.findings:
        raise AssertionError("a secret leaked into " + "; ".join(sorted(set(scanner.findings))))
    return result

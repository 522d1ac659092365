"""Exponential backoff with jitter (KIP-580), as the Java client's ``ExponentialBackoff``.

The n-th retry waits ``initial * multiplier**n`` milliseconds, capped at ``maximum``, then moved
by up to ``jitter`` (a fraction) either way so that many clients do not retry in step. With
``initial == maximum`` (or ``maximum <= initial``) the wait is constant, apart from the jitter.
"""

from __future__ import annotations

import math
import random

__all__ = ["ExponentialBackoff"]


class ExponentialBackoff:
    """Milliseconds to wait before attempt number ``attempts`` (0 for the first retry).

    Thread-safety: immutable apart from the random source; safe to share.
    """

    __slots__ = ("_initial", "_multiplier", "_max", "_jitter", "_exp_max", "_random")

    def __init__(
        self,
        initial_ms: int,
        multiplier: float = 2.0,
        max_ms: int | None = None,
        jitter: float = 0.2,
        rng: random.Random | None = None,
    ) -> None:
        """Back off from ``initial_ms`` up to ``max_ms`` (default: ``initial_ms``)."""
        if initial_ms < 0:
            raise ValueError("initial_ms must be >= 0")
        self._initial = initial_ms
        self._multiplier = multiplier
        self._max = max(initial_ms, initial_ms if max_ms is None else max_ms)
        self._jitter = jitter
        # The exponent past which the cap always applies (avoids float overflow).
        if self._initial > 0 and multiplier > 1:
            self._exp_max = math.log(self._max / self._initial, multiplier)
        else:
            self._exp_max = 0.0
        self._random = rng if rng is not None else random.Random()

    def backoff(self, attempts: int) -> int:
        """The wait before retry number ``attempts`` (0-based), in whole milliseconds."""
        if self._exp_max <= 0:
            term = float(self._initial)
        else:
            term = self._initial * self._multiplier ** min(max(attempts, 0), self._exp_max)
        if self._jitter > 0 and term > 0:
            term *= self._random.uniform(1 - self._jitter, 1 + self._jitter)
        return int(min(term, self._max * (1 + self._jitter)))

    @property
    def max_ms(self) -> int:
        """The cap before jitter."""
        return self._max

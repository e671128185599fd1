"""Two versions of the model behind one target: a baseline and a canary.

Pure parts, no clock: which version a request goes to (`CanarySplit`, by a hash
of the request or sticky by tenant, at the rollout's current weight), what a
version answers (`answer_label`: a deterministic class label per request,
which the canary can shift) and whether it fails (`fails`). The target runs the
canary on its own GPUs (a canary deployment is its own replicas), so the
canary's cost factor slows only the canary's batches. Compiled with the core
(`targets.native`): the split and the answers run for every attempt of a rollout;
`ModelVersion` (a pydantic model) and `VersionedOutput` (a tuple) live in
`targets.model_version`.
"""

from __future__ import annotations

import zlib
from enum import StrEnum
from typing import Any, Final

from targets.model_version import BASELINE, ModelVersion, VersionedOutput

__all__ = ["BASELINE", "CanaryRouting", "CanarySplit", "ModelVersion", "VersionedOutput", "answer_label", "fails",
           "LABELS", "tagged", "version_of"]

LABELS = 10  # output classes of the modeled classifier

_M32: Final = 0xFFFFFFFF


class CanaryRouting(StrEnum):
    HASH = "hash"                    # per request: a hash of its id against the weight
    STICKY_TENANT = "sticky-tenant"  # per tenant: all of a tenant's requests go one way


def _times(h: int, lo: int, c3: int, c2: int, c1: int, c0: int) -> tuple[int, int]:
    """(h:lo * c) mod 2**64, a 64-bit number and the answer as their 32-bit halves and the
    constant c as its four 16-bit limbs (c3 highest): schoolbook on 16-bit limbs, so that every
    product has both factors below 2**30 (compiled, a native multiply; a larger factor makes
    mypyc's int multiply a big-int one) and no sum passes 2**51."""
    a3, a2, a1, a0 = h >> 16, h & 0xFFFF, lo >> 16, lo & 0xFFFF
    r1 = a1 * c0 + a0 * c1
    t = a0 * c0 + ((r1 & 0xFFFF) << 16)
    r3 = a3 * c0 + a2 * c1 + a1 * c2 + a0 * c3
    return ((r1 >> 16) + (t >> 32) + a2 * c0 + a1 * c1 + a0 * c2 + ((r3 & 0xFFFF) << 16)) & _M32, t & _M32


def _unit(x: int, salt: int) -> float:
    """splitmix64's finaliser of `x * 0x100000001B3 + salt` (its low 64 bits), scaled to [0, 1):

        x = (x + 0x9E3779B97F4A7C15) mod 2**64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) mod 2**64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) mod 2**64
        (x ^ (x >> 31)) / 2**64

    computed on the 64-bit value's two 32-bit halves, so that, compiled, every step is a native
    integer (the 64-bit value itself, and its products, were big-int operations: a quarter of a
    canary rollout's CPU). The quotient is the same float: hi * 2**32 + lo rounds once, as the
    64-bit integer converted to a float does. (tests/targets/test_versions.py: against the
    formula above in Python integers.)"""
    v = (x << 40) + x * 0x1B3 + salt  # x * 0x100000001B3 + salt (native while x is below 2**21)
    h, lo = (v >> 32) & _M32, v & _M32
    lo += 0x7F4A7C15
    h, lo = (h + 0x9E3779B9 + (lo >> 32)) & _M32, lo & _M32
    h, lo = h ^ (h >> 30), lo ^ (((h & 0x3FFFFFFF) << 2) | (lo >> 30))
    h, lo = _times(h, lo, 0xBF58, 0x476D, 0x1CE4, 0xE5B9)
    h, lo = h ^ (h >> 27), lo ^ (((h & 0x7FFFFFF) << 5) | (lo >> 27))
    h, lo = _times(h, lo, 0x94D0, 0x49BB, 0x1331, 0x11EB)
    h, lo = h ^ (h >> 31), lo ^ (((h & 0x7FFFFFFF) << 1) | (lo >> 31))
    return (float(h) * 4294967296.0 + float(lo)) / 18446744073709551616.0


class CanarySplit:
    """Routes a share `weight` of requests (or of tenants) to the canary.

    Hash routing raises the weight by extending the canary's hash range, so a
    request that went to the canary at 5% still goes there at 25%. `salt` picks
    the rollout's hash (a deployment salts by rollout; the sim by seed), so two
    seeds send different requests and tenants to the canary."""

    def __init__(self, canary: ModelVersion, routing: CanaryRouting, weight: float = 0.0, salt: int = 0) -> None:
        self.canary = canary
        self.routing = routing
        self.weight = weight
        self.salt = salt
        # A request is asked about several times in a row (the transport, the cache, the
        # target), and a tenant on every request: its hash point is kept, not recomputed.
        self._last_key = -1
        self._last_unit = 0.0
        self._tenant_units: dict[str, float] = {}

    def to_canary(self, request_key: int, tenant: str) -> bool:
        weight = self.weight
        if weight <= 0.0:
            return False
        if self.routing is CanaryRouting.STICKY_TENANT:
            u = self._tenant_units.get(tenant)
            if u is None:
                u = self._tenant_units[tenant] = _unit(zlib.crc32(tenant.encode()), 2 + 2 * self.salt)
            return u < weight
        if request_key != self._last_key:
            self._last_unit = _unit(request_key, 1 + 2 * self.salt)
            self._last_key = request_key
        return self._last_unit < weight


def tagged(output: Any, version: ModelVersion, content: int) -> Any:
    """A version's answer, saying which version computed it: a real model's answer
    (live: a dict from targets.gpu.models) gets a `version` field; a modeled one (None)
    becomes a `VersionedOutput` of the version's modeled label."""
    if isinstance(output, dict):
        return {**output, "version": version.name}
    # (tuple.__new__ itself: VersionedOutput's own __new__ is a Python-level frame, once an answer)
    return tuple.__new__(VersionedOutput, (answer_label(content, version), version.name))


def version_of(output: Any) -> str | None:
    """The version an answer says computed it, or None when it does not say."""
    if isinstance(output, VersionedOutput):
        return output.version
    if isinstance(output, dict):
        name = output.get("version")
        return name if isinstance(name, str) else None
    return None


def answer_label(content: int, version: ModelVersion) -> int:
    """The class a version answers for an input: the baseline's skewed label
    (low classes commoner), moved one class up for `output_shift` of inputs."""
    u = _unit(content, 2)
    label = min(LABELS - 1, int(LABELS * u * u))
    if version.output_shift and _unit(content, 3) < version.output_shift:
        label = (label + 1) % LABELS
    return label


def fails(request_key: int, attempt_no: int, version: ModelVersion) -> bool:
    """Whether this version answers this attempt with a 5xx (independent per attempt)."""
    return version.error_rate > 0 and _unit(request_key * 31 + attempt_no, 4) < version.error_rate

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
from typing import Any

from targets.model_version import BASELINE, ModelVersion, VersionedOutput

__all__ = ["BASELINE", "CanaryRouting", "CanarySplit", "ModelVersion", "VersionedOutput", "answer_label", "fails",
           "LABELS", "tagged", "version_of"]

LABELS = 10  # output classes of the modeled classifier

_MASK = (1 << 64) - 1


class CanaryRouting(StrEnum):
    HASH = "hash"                    # per request: a hash of its id against the weight
    STICKY_TENANT = "sticky-tenant"  # per tenant: all of a tenant's requests go one way


def _mix(x: int) -> int:
    """splitmix64's finaliser: a uniform 64-bit hash of an integer."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _unit(x: int, salt: int) -> float:
    return _mix(x * 0x100000001B3 + salt) / 2.0 ** 64


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

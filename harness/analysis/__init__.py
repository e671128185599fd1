"""The analyses behind the commands: one package per feature, shared tools beside them.

Features (a folder each; its `__init__` names its entry points):
`rank/` (the flaw ranking), `capacity/` (Part 2), `pool/` (Part 3), `canary/`, `alerts/`,
`llm/`, `sweep/`, `compare/`, and `review/`, which composes the others. Features do not
import each other; only `review` may (an import-linter contract in pyproject.toml). Where a
feature reports another's figure (the rank's LLM section, the sweep's capacity check) it
takes it as a function, which the CLI or the review passes.

Shared tools (a module each, used by several features and by `harness.gate`; they import
no feature): `stats` (intervals over seeds), `seeds` (one job over several seeds),
`exposure` (how much of a disturbance a flaw needs to show), `shorten` (scenarios cut to
a bounded length), `variants` (a design with one flaw put back or fixed, as jobs) and
`traffic` (constant-rate probe traffic).
"""

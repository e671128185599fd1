"""Registers the commands that live in their own modules (one import each)."""
from harness import cli_live  # noqa: E402,F401  (run/compare --mode live, serve, profile)
from harness import pool_cmd  # noqa: E402,F401  (pool: Part 3, two models on one GPU pool)
from harness import cli_capacity  # noqa: E402,F401  (capacity: Part 2, fleet sizing)
from harness import cli_rank  # noqa: E402,F401  (rank, review, gate: flaw ranking, design review, CI gates)

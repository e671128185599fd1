"""Registers the commands that live in their own modules (one import each)."""
from harness import cli_live  # noqa: E402,F401  (run/compare --mode live, serve, profile)

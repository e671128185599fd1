"""Registers the commands that live in their own modules (one import each)."""

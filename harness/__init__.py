"""The harness (see docs/design.md). Importing it first imports `targets`, which decides whether the
compiled core runs (`targets.native`)."""

import targets  # noqa: F401  (decides compiled or pure before any engine module loads)

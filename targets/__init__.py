"""The serving designs under test (see docs/design.md). Importing the package decides whether the
compiled core runs (`targets.native`)."""

from targets.native import install

install()

"""The serving designs under test (see DESIGN.md). Importing the package decides whether the
compiled core runs (`targets.native`)."""

from targets.native import install

install()

"""Builds the compiled core: the modules `targets.native.COMPILED` names, compiled by mypyc.

Everything else is in pyproject.toml. The extensions are optional: without a C compiler (or
with HARNESS_PURE_PYTHON=1 at build time) the install still succeeds and the harness runs the
same modules from source (`targets.native` decides at import; `harness --version` says which).
"""

import ast
import os
from pathlib import Path

from setuptools import setup


def _compiled() -> list[str]:
    tree = ast.parse(Path(__file__).with_name("targets").joinpath("native.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COMPILED":
            return [name.replace(".", "/") + ".py" for name in ast.literal_eval(node.value)]
    raise RuntimeError("targets/native.py has no COMPILED tuple")


def _drop_stale(compiled: list[str]) -> None:
    """Remove the extensions an earlier in-place build left beside modules no longer compiled:
    Python imports a module's extension before its source, so a stale one would shadow the
    source and reach into a group library that no longer has it (an ImportError at start-up)."""
    root = Path(__file__).parent
    keep = {name[:-3] for name in compiled}  # "targets/batcher"
    for package in ("harness", "targets"):
        for ext in (root / package).rglob("*.cpython-*.so"):
            if str(ext.relative_to(root)).split(".", 1)[0] not in keep:
                print(f"setup.py: removing {ext.relative_to(root)}, built when its module was compiled")
                ext.unlink()


def _extensions() -> list:
    if os.environ.get("HARNESS_PURE_PYTHON", "") not in ("", "0"):
        return []
    _drop_stale(_compiled())
    try:
        from mypyc.build import mypycify
    except ImportError:  # pip's build isolation installs mypy (pyproject's build requires)
        print("setup.py: mypy is not installed: no compiled core, the harness runs pure Python")
        return []
    try:
        # --config-file= (empty): not pyproject's [tool.mypy], which is CI's check and loads pydantic's
        # plugin; pip's isolated build has no pydantic, and these flags alone compile the core.
        exts = mypycify(["--config-file=", "--ignore-missing-imports", "--follow-imports=silent", *_compiled()],
                        opt_level="3", group_name="harness_core")
    except (Exception, SystemExit) as exc:  # mypyc refuses code that does not type-check
        print(f"setup.py: mypyc could not compile the core ({exc!r}): the harness runs pure Python")
        return []
    for ext in exts:
        ext.optional = True  # a failed compile leaves the pure-Python modules, not a failed install
    return exts


setup(ext_modules=_extensions())

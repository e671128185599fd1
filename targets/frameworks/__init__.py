"""Real serving frameworks as live targets: LitServe, Ray Serve and BentoML serving the project's model.

`litserve`, `ray-serve` and `bentoml` take `FRAMEWORK[:KEY=VALUE,...]` specs (their own knobs, or
the design's TargetConfig knobs: fleet, clients, SLO) and run live only: a live run
starts the framework's server on loopback (harness.live.framework_host), drives it
as it drives the harness's own targets and records the framework's version. Each
framework declares the doc's flaws it has at its defaults and the knob that fixes
each (`registry`). Importing this package imports neither the frameworks nor torch:
only their servers (`litserve_app`, `ray_app`, `bentoml_app`, `worker`) do.
"""

from targets.frameworks.knobs import BentoMLKnobs, DeclaredFlaw, FrameworkKnobs, LitServeKnobs, RayServeKnobs
from targets.frameworks.registry import FRAMEWORKS, Framework, get_framework, installed_version
from targets.frameworks.spec import FrameworkTarget, framework_knob_names, framework_name, framework_target

__all__ = ["FRAMEWORKS", "BentoMLKnobs", "DeclaredFlaw", "Framework", "FrameworkKnobs", "FrameworkTarget",
           "LitServeKnobs", "RayServeKnobs", "framework_knob_names", "framework_name", "framework_target",
           "get_framework", "installed_version"]

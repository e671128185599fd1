"""Find and load scenario files; bad files get errors naming file, key, problem."""

from __future__ import annotations

from pathlib import Path

from workloads.config_files import ConfigError, read_toml, validate
from workloads.model import WorkloadConfig

# ConfigError, read_toml and validate live in workloads.config_files; re-exported here for
# the callers that import them from the loader.
__all__ = ["ConfigError", "load_suite", "load_workload", "read_toml", "resolve_scenario_path",
           "scenario_names", "suite_durations", "suite_names", "validate"]

SCENARIO_DIR = Path(__file__).parent / "scenarios"
SUITE_DIR = Path(__file__).parent / "suites"


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))


def resolve_scenario_path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return path
    candidate = SCENARIO_DIR / f"{name_or_path}.toml"
    if not candidate.exists():
        raise ConfigError(
            f"unknown workload '{name_or_path}': valid names are {', '.join(scenario_names())}, "
            "or give a path to a .toml file"
        )
    return candidate


def load_workload(name_or_path: str) -> WorkloadConfig:
    """A workload by built-in name (`steady`) or by TOML path."""
    path = resolve_scenario_path(name_or_path)
    data = read_toml(path)
    data.setdefault("name", path.stem)
    return validate(WorkloadConfig, data, str(path))


def suite_names() -> list[str]:
    return sorted(p.stem for p in SUITE_DIR.glob("*.toml"))


def load_suite(name_or_path: str) -> list[str]:
    """Scenario names of a suite (`bad-day`) or of a suite TOML file."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" or path.exists()):
        path = SUITE_DIR / f"{name_or_path}.toml"
        if not path.exists():
            raise ConfigError(f"unknown suite '{name_or_path}': valid names are {', '.join(suite_names())}")
    data = read_toml(path)
    scenarios = data.get("scenarios")
    if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios) or not scenarios:
        raise ConfigError(f"{path}: key 'scenarios': must be a non-empty list of workload names")
    for s in scenarios:
        resolve_scenario_path(s)
    suite_durations(name_or_path)
    return scenarios


def suite_durations(name_or_path: str) -> dict[str, float]:
    """Per-scenario run lengths a suite asks for (its `[durations]` table)."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" or path.exists()):
        path = SUITE_DIR / f"{name_or_path}.toml"
    data = read_toml(path)
    table = data.get("durations", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: key 'durations': must be a table of scenario = seconds")
    out: dict[str, float] = {}
    for key, value in table.items():
        if key not in data.get("scenarios", []):
            raise ConfigError(f"{path}: key 'durations.{key}': not one of the suite's scenarios")
        if not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"{path}: key 'durations.{key}': must be a positive number of seconds")
        out[key] = float(value)
    return out

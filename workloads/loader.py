"""Find and load scenario files; bad files get errors naming file, key, problem."""

from __future__ import annotations

import functools
from pathlib import Path

from workloads.config_files import ConfigError, parse_toml, read_bytes, read_toml, validate
from workloads.model import WorkloadConfig
from workloads.suite import Suite

# ConfigError, read_toml and validate live in workloads.config_files; re-exported here for
# the callers that import them from the loader.
__all__ = ["ConfigError", "load_suite", "load_suite_config", "load_workload", "read_toml",
           "resolve_scenario_path", "scenario_names", "suite_durations", "suite_names", "validate"]

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
    """A workload by built-in name (`steady`) or by TOML path.

    Kept by the file's path and bytes (a config is immutable): a process loads a scenario
    for every run of it (a rank's hundreds), and parsing and validating it cost 2.5 ms where
    reading it costs microseconds; a file edited since is read again and parsed afresh."""
    path = resolve_scenario_path(name_or_path)
    return _parsed(path, read_bytes(path))


@functools.lru_cache(maxsize=256)
def _parsed(path: Path, raw: bytes) -> WorkloadConfig:
    data = parse_toml(raw, path)
    data.setdefault("name", path.stem)
    return validate(WorkloadConfig, data, str(path))


def suite_names() -> list[str]:
    return sorted(p.stem for p in SUITE_DIR.glob("*.toml"))


def _suite_path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return path
    path = SUITE_DIR / f"{name_or_path}.toml"
    if not path.exists():
        raise ConfigError(f"unknown suite '{name_or_path}': valid names are {', '.join(suite_names())}")
    return path


def load_suite_config(name_or_path: str) -> Suite:
    """A whole suite (`bad-day`, or a suite TOML path): its scenarios, durations and canary rollouts."""
    path = _suite_path(name_or_path)
    data = read_toml(path)
    data.setdefault("name", path.stem)
    suite = validate(Suite, data, str(path))
    for i, s in enumerate(suite.scenarios):
        try:
            resolve_scenario_path(s)
        except ConfigError as exc:
            raise ConfigError(f"{path}: key 'scenarios[{i}]': {exc}") from None
    return suite


def load_suite(name_or_path: str) -> list[str]:
    """The workload scenario names of a suite: what `compare`, `rank` and `alerts` run.

    A suite's canary rollouts are not workloads and are left to `harness canary
    --suite`; a suite with only rollouts is refused here, saying so.
    """
    suite = load_suite_config(name_or_path)
    if not suite.scenarios:
        raise ConfigError(f"suite '{suite.name}' holds canary rollouts, no workload scenarios: "
                          f"run it with `harness canary --suite {name_or_path}`")
    return list(suite.scenarios)


def suite_durations(name_or_path: str) -> dict[str, float]:
    """Per-scenario run lengths a suite asks for (its `[durations]` table)."""
    return dict(load_suite_config(name_or_path).durations)

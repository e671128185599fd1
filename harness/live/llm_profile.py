"""`harness profile llm`: calibrate the sim's step cost on the live tiny-decoder engine.

The profile serves the tiny decoder in this process (`harness.live.llm_drive`),
drives it open loop with a short calibration load, and fits `StepCost` to the
steps the live engine logged (prefill tokens, decode rows, context tokens, wall
seconds from schedule to complete: model time plus the engine's own thread
hop). Fitting what the engine really did, rather than timing the model alone,
is what lets a sim run with that cost predict the live engine's TPOT.

TTFT needs one thing more: the front end. A request reaches the engine some
milliseconds after its scheduled start (the driver's send, the HTTP hop, the
handler), and a token reaches the client some time after the engine made it;
on the tiny model these are as large as a prefill. The profile measures both
per request (`Served.front_in_s`, `front_out_s`) and keeps their medians as
the cost's front-end terms, which the sim adds to every request.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from harness.live.llm_drive import serve_and_drive
from targets.gpu.executor import torch_threads, torch_version
from targets.llm import LlmEngineSpec
from targets.llm.cost import StepCost
from workloads.llm import LengthDist, LlmSchedule, LlmWorkload, build_llm_schedule

__all__ = ["CALIBRATION", "LIVE_ENGINE", "LlmProfile", "calibration_schedule", "load_cost", "profile_llm",
           "speed_drift"]

# The live engine's knobs: sized for the tiny decoder on a CPU (max_len 512).
LIVE_ENGINE = LlmEngineSpec(kv_blocks=512, block_size=16, max_seqs=16, max_batched_tokens=512, chunk_tokens=128)
# Short prompts and answers (means 48 and 24 tokens) at a rate the CPU engine serves.
CALIBRATION = LlmWorkload(name="calibration", rate_rps=6.0, duration_s=20.0,
                          prompt=LengthDist.of_lognormal(48, 0.5, 200), output=LengthDist.of_lognormal(24, 0.5, 64))


def calibration_schedule(rate_rps: float, duration_s: float, seed: int) -> LlmSchedule:
    return build_llm_schedule(CALIBRATION.model_copy(update={"rate_rps": rate_rps, "duration_s": duration_s}), seed)


@dataclass(frozen=True)
class LlmProfile:
    rows: list[tuple[int, int, int, float]]
    cost: StepCost
    threads: int
    torch: str
    requests: int            # requests whose front end was measured

    def to_json(self, path: Path) -> Path:
        path.write_text(json.dumps({"kind": "llm-cost", "torch": self.torch, "threads": self.threads,
                                    "cost": asdict(self.cost), "steps": len(self.rows), "requests": self.requests},
                                   indent=1))
        return path


def load_cost(path: str | Path) -> StepCost:
    """The fitted cost of a `profile llm` file; ValueError naming the file when it is not one."""
    try:
        return StepCost(**json.loads(Path(path).read_text())["cost"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not an LLM cost file from `harness profile llm` ({exc})") from None


def profile_llm(rate_rps: float = CALIBRATION.rate_rps, duration_s: float = CALIBRATION.duration_s,
                threads: int | None = None, seed: int = 7) -> LlmProfile:
    """Serve, drive and fit; ValueError when the live run failed. `threads`: torch intra-op threads
    of the served engine (default 1, as `serve_and_drive`)."""
    served = asyncio.run(serve_and_drive(LIVE_ENGINE, calibration_schedule(rate_rps, duration_s, seed),
                                         threads=threads or 1))
    if served.errors:
        raise ValueError(f"calibration run failed: {served.errors[0]} ({len(served.errors)} errors)")
    if not served.front_in_s:
        raise ValueError("calibration run finished no request: no front end to measure")
    cost = replace(StepCost.from_table(served.steps), frontend_in_s=statistics.median(served.front_in_s),
                   frontend_out_s=statistics.median(served.front_out_s))
    return LlmProfile(served.steps, cost, torch_threads(), torch_version(), len(served.front_in_s))


def speed_drift(profile: LlmProfile, steps: list[tuple[int, int, int, float]]) -> float:
    """How fast a live run's engine ran against `profile`: the median over `steps` (a `Served.steps`
    log) of measured step time / the profiled cost's prediction, over the same median on the profile's
    own steps (so a skewed step-time distribution cancels out); 1 when the machine kept its speed.
    On a shared CPU the same step's wall time moves with other processes' load, and a sim calibrated
    at another speed cannot predict the run: this says by how much that happened."""
    def ratio(rows: list[tuple[int, int, int, float]]) -> float:
        if not rows:
            raise ValueError("no steps to compare")
        return statistics.median(wall / profile.cost.time_s(p, d, c) for p, d, c, wall in rows)
    return ratio(steps) / ratio(profile.rows)

"""docs/frameworks.md: the framework targets (knobs, declared flaws, tuned knobs) and the live-run
validity rule that names who is at fault, beside MLPerf LoadGen's.

The frameworks come from `targets.frameworks.registry.FRAMEWORKS`, their knobs from
each knob model, the validity thresholds from `harness.live.validity.LIMITS`.
"""

from __future__ import annotations

import inspect

from harness.docs.fields import field_docs
from harness.docs.markdown import banner, block, code, literal, table
from harness.live import validity
from targets.frameworks import knobs as knobs_module
from targets.frameworks import spec as spec_module
from targets.frameworks.registry import FRAMEWORKS


def _ms(s: float) -> str:
    return f"{s * 1000:g} ms"


def page() -> str:
    lim = validity.LIMITS
    out = [banner(["targets/frameworks/", "harness/live/validity.py"]),
           "# Framework targets and who is at fault in a live run\n",
           "## Framework targets\n",
           " ".join(inspect.cleandoc(knobs_module.__doc__ or "").split("\n\n")[0].split()) + "\n",
           block(inspect.cleandoc(spec_module.__doc__ or "")),
           "Live only: `harness run litserve --mode live`, `harness compare hardened litserve --mode live -w spike "
           "--scale 0.1`, `harness compare litserve ray-serve --mode live`, `harness review bentoml`. The server "
           "starts on 127.0.0.1 in a "
           "process session of its own, is ready once a /predict answers 200, and is stopped whole at the end; the "
           "result's `live.framework` holds its name, installed version, knobs, workers and declared flaws, and its "
           "`flaws` the declared flaws its knobs leave. A live compare with a framework runs no sim beside it "
           "(`live.sim_skipped`). A framework target takes the `slowdown` fault, not `gpu-down`. "
           "Install: `pip install -e '.[frameworks]'`.\n"]
    for fw in FRAMEWORKS.values():
        out += [f"### {code(fw.name)}\n", f"{fw.summary}. Tuned: {code(fw.tuned_spec())}.\n",
                table(("flaw at its defaults", "why", "knob that fixes it"),
                      [(code(f.id), f.why, (", ".join(f"{code(f'{k}={literal(v)}')}" for k, v in f.fix.items())
                                            or "none") + (f": {f.fix_note}" if f.fix_note else ""))
                       for f in fw.flaws]),
                table(("knob", "type", "default", "meaning"),
                      [(code(d.key), d.type, code(literal(d.default)), d.meaning)
                       for d in field_docs(fw.knobs)])]
    out += ["## Who is at fault in a live run\n",
            "A live run's figures are the target's only while the driver offered the workload's load on time. "
            "`harness.live.validity.judge` sorts what went wrong by who did it; the result's `live.validity` "
            "holds `fault` (none, driver, target, both), `target_findings` and `remedies`.\n",
            table(("what the run recorded", "whose", "verdict"), [
                (f"over {lim.late_share:.0%} of the sends over {_ms(validity.LATE_BOUND_S)} late "
                 f"(`live.late_over_10ms` of `live.sends_measured`), or a send lag p99.9 over "
                 f"{_ms(lim.send_lag_p999_s)} (`live.send_lag_s`: a stall); a few late sends among thousands "
                 "are neither",
                 "the driver's (its schedule, its CPU, a busy machine)", "invalid"),
                (f"the driver process busy {lim.driver_cpu_share:.0%} of a core or more", "the driver's", "invalid"),
                (f"connects failing for over {lim.connect_error_share:.0%} of attempts", "unreachable target",
                 "invalid"),
                ("nothing answered successfully", "no figures to judge", "invalid"),
                (f"requests written over {_ms(lim.connection_wait_p99_s)} (p99) beyond their send lag: every "
                 "connection busy (`waited_for_connection`), up to all the driver may open (`max_open_connections` "
                 "at `connection_cap`)",
                 "the target's: HTTP/1.1 holds a connection until its answer, so a busy connection is a request "
                 "the target has not answered", "valid, with a finding: the target was overloaded (the wait counts "
                 "in its latency, measured from the scheduled start)"),
                ("both a late driver and held connections", "both", "invalid, and the finding is said too"),
            ]),
            "An invalid run says how to get a valid one: `--driver-procs N` when the driver's own CPU ran out; the "
            "target's processes pinned apart from the driver's (`taskset`) when the machine was busy; a second "
            "machine for the driver (`harness run http://HOST:PORT/predict --mode live --allow-remote`).\n",
            "### Beside MLPerf LoadGen\n",
            "LoadGen (Server scenario) issues queries on a Poisson schedule from its own thread and measures each "
            "from its scheduled time, as the harness does. Its VALID / INVALID verdict judges the system under "
            "test: the run must last the minimum duration and query count, and the target percentile latency (or "
            "its early-stopping estimate) must be within the bound; otherwise INVALID with a recommendation "
            "(\"Reduce target QPS\"). So an overloaded system makes a LoadGen run INVALID, and a late issuer is "
            "not a separate verdict. Here the two questions are kept apart: `valid` says whether the figures are "
            "the target's (the driver kept its schedule and reached the target), and whether the target met its "
            "SLO is its figures' business (goodput, p99, `harness gate`); an overloaded target is a valid run "
            "with a finding, a late driver an invalid one, whatever the target did.\n"]
    return "\n".join(out)

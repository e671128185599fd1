"""targets.frameworks: framework specs, their knobs and declared flaws, and the books their servers keep.

No framework, no torch and no server here: specs are data, books are files.
"""

from __future__ import annotations

import os

import pytest

from targets.config import TargetConfig
from targets.flaws import FLAW_IDS
from targets.frameworks import FRAMEWORKS, framework_name, framework_target
from targets.frameworks.books import Books, Field, Slowdown, read_books, write_slowdown
from targets.frameworks.server_spec import ServerSpec
from targets.spec import parse_overrides, resolve_target
from workloads.config_files import ConfigError


def test_a_spec_names_a_framework_only_by_its_head() -> None:
    assert framework_name("litserve") == "litserve" and framework_name("bentoml:max_latency_ms=250") == "bentoml"
    assert framework_name("ray-serve:max_queued_requests=100") == "ray-serve"
    assert framework_name("hardened") is None and framework_name("http://127.0.0.1:8000/predict") is None


def test_knobs_go_to_the_framework_and_design_knobs_to_its_design() -> None:
    t = framework_target("litserve:timeout=0.2,max_batch_size=16,client_timeout_s=2", {"slo_s": 0.5})
    assert t.knobs.timeout == 0.2 and t.knobs.max_batch_size == 16
    assert t.config.client_timeout_s == 2 and t.config.slo_s == 0.5
    assert t.config.name == "litserve:timeout=0.2,max_batch_size=16,client_timeout_s=2"
    assert t.batch_size() == 16


def test_the_design_is_hardeneds_fleet_and_clients_without_its_servers_dedupe() -> None:
    t = framework_target("ray-serve")
    hardened = resolve_target("hardened")
    assert t.config.fleet_gpus == hardened.fleet_gpus  # 80% and N+1: the same workers at a scale
    assert (t.config.client_backoff, t.config.retry_budget, t.config.request_ids) == \
           (hardened.client_backoff, hardened.retry_budget, hardened.request_ids)
    assert t.config.dedupe is False and t.config.admission is False
    # the framework's own defaults, but B from the design and Ray's ongoing limit raised to it
    assert t.batch_size() == 32 and t.knobs.batch_wait_timeout_s == 0.01 and t.knobs.max_queued_requests == -1


def test_workers_follow_the_scaled_fleet_unless_a_knob_sets_them() -> None:
    t = framework_target("litserve")
    small = TargetConfig.model_validate({**t.config.model_dump(), "peak_qps": 937.5})
    assert t.workers(small) == small.fleet_gpus == 5   # ceil(937.5 x 0.1 / 32 / 0.8) + 1
    assert framework_target("litserve:workers_per_device=2").workers(small) == 2


def test_pad_is_the_designs_batch_time_unless_set() -> None:
    assert framework_target("litserve").pad_s() == 0.1
    assert framework_target("litserve:pad_to_s=0").pad_s() is None
    assert framework_target("litserve:pad_to_s=0.05").pad_s() == 0.05


@pytest.mark.parametrize("spec, error", [
    ("litserve:bogus=1", "key 'bogus': not a litserve knob"),
    ("litserve+blind-retries", "a framework takes knobs, not +FLAW or -FLAW"),
    ("litserve:max_batch_size=0", "key 'max_batch_size'"),
    ("ray-serve:timeout=1", "key 'timeout': not a ray-serve knob"),   # LitServe's knob, not Ray's
    ("litserve:max_batch_size", "'max_batch_size' is not KEY=VALUE"),
    ("bentoml:max_latency_ms=0", "key 'max_latency_ms': Input should be greater than or equal to 1"),
    ("bentoml:max_concurrency=0", "key 'max_concurrency': Input should be greater than or equal to 1"),
    ("bentoml:timeout=-1", "key 'timeout': Input should be greater than 0"),
    ("bentoml:workers=0", "key 'workers'"),
    ("bentoml:api_workers=two", "key 'api_workers': Input should be a valid integer"),
    ("bentoml:runner_max_requests=0", "key 'runner_max_requests'"),
    ("bentoml:batch_wait_timeout_s=0.1", "key 'batch_wait_timeout_s': not a bentoml knob"),  # Ray's, not BentoML's
])
def test_bad_specs_say_what_is_wrong(spec: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error.replace("+", r"\+")):
        framework_target(spec)


def test_resolve_target_and_set_accept_framework_knobs_only_for_frameworks() -> None:
    assert parse_overrides(["timeout=0.2", "slo_s=0.5"]) == {"timeout": 0.2, "slo_s": 0.5}
    assert resolve_target("litserve", {"timeout": 0.2}).name == "litserve"
    with pytest.raises(ConfigError, match="'timeout' is a framework's knob, not this target's"):
        resolve_target("hardened", {"timeout": 0.2})


def test_every_declared_flaw_is_the_catalogues_or_says_it_is_not() -> None:
    for fw in FRAMEWORKS.values():
        assert fw.flaws, fw.name
        for flaw in fw.flaws:
            assert flaw.id in FLAW_IDS or "not in the doc's catalogue" in flaw.why, (fw.name, flaw.id)
            assert set(flaw.fix) <= set(fw.knobs.model_fields), (fw.name, flaw.id)
        assert set(fw.tuned) <= set(fw.knobs.model_fields)
        framework_target(fw.tuned_spec())  # the tuned spec parses


def test_a_flaw_is_fixed_once_its_fix_knobs_move_off_the_default() -> None:
    default = framework_target("litserve").flaws()
    assert "no-admission-control" in default and "no-tenant-limits" in default
    tuned = framework_target("litserve:timeout=0.2").flaws()
    assert "no-admission-control" not in tuned and "blind-retries" in tuned  # no knob dedupes
    assert "no-admission-control" not in framework_target("ray-serve:max_queued_requests=50").flaws()
    assert "clock-cut-batches" not in framework_target("ray-serve:batch_wait_timeout_s=0.1").flaws()


def test_tuned_spec_text() -> None:
    assert FRAMEWORKS["litserve"].tuned_spec() == "litserve:timeout=0.2,batch_timeout=0.01,num_api_servers=1"
    assert FRAMEWORKS["bentoml"].tuned_spec() == "bentoml:max_latency_ms=250,runner_max_requests=1000000000"


def test_bentoml_knobs_are_bentomls_own_with_the_designs_batch_and_fleet() -> None:
    t = framework_target("bentoml")
    # BentoML's defaults: a 60 s max latency, no concurrency limit, a 60 s timeout, one API worker
    assert (t.knobs.max_latency_ms, t.knobs.max_concurrency, t.knobs.timeout, t.knobs.api_workers) == \
           (60_000, None, 60.0, 1)
    assert t.knobs.runner_max_requests == 100 and t.batch_size() == 32 and t.pad_s() == 0.1
    small = TargetConfig.model_validate({**t.config.model_dump(), "peak_qps": 937.5})
    assert t.workers(small) == 5                                   # the design's GPUs at the scale
    set_ = framework_target("bentoml:workers=2,api_workers=2,max_concurrency=64,timeout=5", {"max_batch_size": 8})
    assert set_.workers(small) == 2 and set_.batch_size() == 8
    assert (set_.knobs.api_workers, set_.knobs.max_concurrency, set_.knobs.timeout) == (2, 64, 5.0)


def test_bentomls_flaws_and_the_knobs_that_fix_them() -> None:
    default = framework_target("bentoml").flaws()
    assert {"no-admission-control", "per-server-queues", "pool-refresh-fails-calls", "blind-retries",
            "no-tenant-limits"} <= set(default)
    assert "no-admission-control" not in framework_target("bentoml:max_latency_ms=250").flaws()
    assert "pool-refresh-fails-calls" not in framework_target("bentoml:runner_max_requests=1000000000").flaws()
    tuned = framework_target(FRAMEWORKS["bentoml"].tuned_spec()).flaws()
    assert tuned == ["per-server-queues", "blind-retries", "no-tenant-limits", "fixed-batch-time"]


# -- books ---------------------------------------------------------------------------------------

def test_books_add_up_over_every_process_file(tmp_path) -> None:
    api, w1 = Books(tmp_path, "api"), Books(tmp_path, "worker")
    api.add(Field.RECEIVED, 5)
    api.add(Field.ANSWERED, 3)
    w1.batch(4, 0.1, 100.0)
    w1.batch(7, 0.2, 101.0)
    # a second worker's file, as another process would leave it
    (tmp_path / "worker-99999999.bin").write_bytes(w1.path.read_bytes())
    b = read_books(tmp_path)
    assert b[Field.RECEIVED] - b[Field.ANSWERED] == 2          # two requests inside the server
    assert b[Field.BATCHES] == 4 and b[Field.ITEMS] == 22        # summed
    assert b[Field.LARGEST] == 7 and b[Field.LAST_DONE_S] == 101.0  # the maximum, not the sum
    assert b[Field.BUSY_S] == pytest.approx(0.6) and b[Field.WORKERS] == 2


def test_books_skip_what_is_not_a_books_file(tmp_path) -> None:
    (tmp_path / "x.bin").write_bytes(b"short")
    (tmp_path / "server.log").write_text("hello")
    assert read_books(tmp_path)[Field.BATCHES] == 0


def test_slowdown_is_read_again_when_the_file_changes(tmp_path) -> None:
    seen = Slowdown(tmp_path)
    assert seen.factor() == 1.0                      # no file: full speed
    write_slowdown(tmp_path, 2.0)
    assert seen.factor() == 2.0
    write_slowdown(tmp_path, 1.0)
    assert seen.factor() == 1.0
    assert Slowdown(None).factor() == 1.0
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_server_spec_round_trips(tmp_path) -> None:
    spec = ServerSpec(framework="litserve", port=18000, control_dir=str(tmp_path), workers=3, batch_size=32,
                      knobs={"timeout": 0.2}, pad_to_s=None)
    spec.write(tmp_path / "spec.json")
    assert ServerSpec.read(tmp_path / "spec.json") == spec
    assert os.path.getsize(tmp_path / "spec.json") < 1000

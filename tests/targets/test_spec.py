import pytest

from targets.config import TargetConfig
from targets.flaws import FLAW_IDS, FLAWS
from targets.spec import flaws_present, resolve_target
from workloads.loader import ConfigError


def test_naive_is_the_doc():
    c = resolve_target("naive")
    assert (c.peak_qps, c.batch_size, c.batch_time_s, c.api_servers) == (10_000, 32, 0.1, 10)
    assert c.fleet_gpus == 32  # ceil(10000 * 0.1 / 32)
    assert (c.client_timeout_s, c.client_retries, c.cache.value, c.slo_s) == (1.0, 3, "exact", 0.3)
    assert flaws_present(c) == list(FLAW_IDS)


def test_hardened_fixes_every_flaw_and_sizes_with_headroom():
    c = resolve_target("hardened")
    assert flaws_present(c) == []
    assert c.fleet_gpus == 41  # ceil(31.25 / 0.8) + 1


@pytest.mark.parametrize("flaw", FLAW_IDS)
def test_one_flaw_in_or_out(flaw):
    assert flaws_present(resolve_target(f"hardened+{flaw}")) == [flaw]
    assert flaw not in flaws_present(resolve_target(f"naive-{flaw}"))
    assert len(flaws_present(resolve_target(f"naive-{flaw}"))) == len(FLAW_IDS) - 1


def test_flaws_own_disjoint_knobs():
    seen = set()
    for f in FLAWS:
        assert set(f.present) == set(f.fixed)
        assert not (set(f.present) & seen)
        seen |= set(f.present)
        assert set(f.present) <= set(TargetConfig.model_fields)


def test_chained_spec_and_overrides():
    c = resolve_target("hardened+blind-retries+no-headroom:gpus=40,slo_s=0.2")
    assert set(flaws_present(c)) == {"blind-retries", "no-headroom"}
    assert c.gpus == 40 and c.slo_s == 0.2


@pytest.mark.parametrize("spec, match", [
    ("medium", "unknown target"),
    ("hardened+no-such-flaw", "cannot read"),
    ("hardened:colour=red", "not a target knob"),
    ("hardened:gpus=-1", "greater than or equal"),
    ("naive:dedupe=true", "dedupe needs request_ids"),
])
def test_bad_specs(spec, match):
    with pytest.raises(ConfigError, match=match):
        resolve_target(spec)


def test_target_toml(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text('base = "naive"\nfix = ["full-batch-only"]\n[knobs]\ngpus = 40\n')
    c = resolve_target(str(p))
    assert c.name == "mine" and c.gpus == 40 and "full-batch-only" not in flaws_present(c)
    p.write_text('base = "naive"\n[knobs]\nbatch_size = "big"\n')
    with pytest.raises(ConfigError, match=r"mine.toml: key 'knobs.batch_size'"):
        resolve_target(str(p))
    p.write_text('base = "naive"\nadd = ["nope"]\n')
    with pytest.raises(ConfigError, match=r"key 'add': unknown flaw 'nope'"):
        resolve_target(str(p))

"""The quickest `harness alerts` suite that still proves something, shared by the alert tests:
two bad days of different kinds (an overload that trips the burn-rate pages and leading signals,
a GPU outage) and the calm days, each run for 20 s (phases, faults and bursts keep their shape)."""

QUICK_SUITE = """\
scenarios = ["spike", "gpu-outage", "steady", "diurnal", "night"]
[durations]
spike = 20
gpu-outage = 20
steady = 20
diurnal = 20
night = 20
"""

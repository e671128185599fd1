"""Prometheus metrics of a live target: requests, the target's state, its bounds, the proxy.

Request-path figures are counted as requests pass: the API servers' requests and
latency (from their handler's start), and the front door's latency
(`harness_frontend_latency_seconds`, by outcome: every request the proxy saw, from
its first byte there to its answer, refused, failed or given up on by its client;
targets.http.l4proxy), which is the latency a client sees and the one the goodput
alerts read (harness.ops.rules). Everything else (queue
depth, GPUs, batch sizes, shed counts, the size and limit of every bounded
structure, the proxy's connections and refusals) is read at scrape time, so
neither the target nor the proxy needs a hook for metrics.
"""

from __future__ import annotations

import itertools
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from targets.http.outcomes import FrontOutcome

_LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MAX_TENANT_LABELS = 64  # bound label cardinality when any tenant name is accepted
NO_VERSION = "none"     # the version label of an answer no model computed


class ApiMetrics:
    """Prometheus metrics of one live target, shared by its API servers."""

    def __init__(self, target: Any, tenants: frozenset[str] | None) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.tenants = tenants
        self._labels: set[str] = set()
        r = self.registry
        # `version`: the model version that computed the answer (a canary rollout serves
        # two), NO_VERSION for answers no model computed (sheds, refusals).
        self.requests = Counter("harness_requests", "Requests answered, by tenant, HTTP code and model version",
                                ["tenant", "code", "version"], registry=r)
        self.latency = Histogram("harness_request_latency_seconds", "Server-side latency of answered requests",
                                 ["tenant", "version"], buckets=_LATENCY_BUCKETS_S, registry=r)
        self.version = getattr(getattr(target, "config", None), "model_version", "v1")  # a lone version's name
        self.shed = Counter("harness_shed", "Requests shed (429 tenant limit, 503 overload or deadline)",
                            ["tenant", "reason"], registry=r)
        self.retries = Counter("harness_retries", "Retries received (X-Harness-Attempt > 0)", ["tenant"], registry=r)
        self.bad = Counter("harness_bad_requests", "Refused requests (malformed, timed out, unauthorised), by kind",
                           ["kind"], registry=r)
        self.drops = Counter("harness_client_drops", "Clients that closed their connection before their answer",
                             registry=r)
        r.register(_TargetCollector(target, self))

    def tenant_label(self, tenant: str) -> str:
        if self.tenants is not None or tenant in self._labels:
            return tenant
        if len(self._labels) < MAX_TENANT_LABELS:
            self._labels.add(tenant)
            return tenant
        return "other"

    def watch_proxy(self, proxy: Any) -> None:
        """Report `proxy`'s (a targets.http.l4proxy.L4Proxy) connections, limits and refusals, and
        time every request at it: the front door's latency, by outcome."""
        self.registry.register(_ProxyCollector(proxy))
        front = Histogram("harness_frontend_latency_seconds", "Latency at the front door (the proxy): a request's "
                          "first byte there to its answer's first byte, its refusal, or its client closing, by "
                          "outcome (ok, shed, timed-out: the client gave up, failed)", ["outcome"],
                          buckets=_LATENCY_BUCKETS_S, registry=self.registry)
        children = {o: front.labels(o.value) for o in FrontOutcome}  # every outcome served from the start, at 0
        proxy.on_answer = lambda outcome, seconds: children[outcome].observe(seconds)

    def watch_balancer(self, balancer: Any) -> None:
        """Report HAProxy's (a targets.http.haproxy_proc.HaproxyBalancer) connections, its own 503s and
        its queue, read from its stats socket at scrape time, under the proxy's names."""
        self.registry.register(_BalancerCollector(balancer))

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _bounds(target: Any, metrics: ApiMetrics) -> list[tuple[str, int, int, float | None]]:
    """(structure, entries, max entries, ttl s) of every bounded per-request or per-tenant structure."""
    out: list[tuple[str, int, int, float | None]] = [
        ("tenant-labels", len(metrics._labels), MAX_TENANT_LABELS, None)]
    d = target.dedupe
    if d is not None:
        out.append(("dedupe-answers", d.done_entries, d.max_done, d.ttl_s))
        out.append(("dedupe-waiters-per-id", d.most_waiters, d.max_waiters, None))
    buckets = getattr(target, "_buckets", None)
    if buckets is not None and hasattr(buckets, "max_tenants"):
        out.append(("tenant-buckets", len(buckets), buckets.max_tenants, buckets.capacity / buckets.rate))
    computed = getattr(target, "_computed", None)
    if computed is not None and hasattr(computed, "bound"):
        out.append(("computed-uids", len(computed), computed.bound.max_items, computed.bound.ttl_s))
    if target.cache is not None:
        out.append(("response-cache", len(target.cache._data), target.cache.entries, None))
    return out


class _TargetCollector:
    """Reads the ServingTarget at scrape time (no per-batch hook needed)."""

    def __init__(self, target: Any, metrics: ApiMetrics) -> None:
        self.target = target
        self.metrics = metrics
        self._seen = 0
        self._counts = [0] * (len(_BATCH_BUCKETS) + 1)
        self._sum = 0

    def collect(self):
        t = self.target
        pool = t.pool
        yield GaugeMetricFamily("harness_queue_depth", "Requests queued, batches waiting for a GPU included",
                                value=t.queue_depth())
        yield GaugeMetricFamily("harness_gpus_alive", "GPU workers alive", value=pool.alive_gpus())
        yield GaugeMetricFamily("harness_gpus_busy", "GPU workers running a batch now", value=pool.busy_gpus())
        yield CounterMetricFamily("harness_gpu_busy_seconds", "GPU-seconds spent on batches",
                                  value=pool.busy_gpu_seconds())
        sizes = pool.stats.batch_sizes
        for b in sizes[self._seen:]:
            i = next((k for k, le in enumerate(_BATCH_BUCKETS) if b <= le), len(_BATCH_BUCKETS))
            self._counts[i] += 1
            self._sum += b
        self._seen = len(sizes)
        cum = list(itertools.accumulate(self._counts))
        buckets = [(str(le), cum[k]) for k, le in enumerate(_BATCH_BUCKETS)] + [("+Inf", cum[-1])]
        yield HistogramMetricFamily("harness_batch_size", "Requests per batch run on a GPU",
                                    buckets=buckets, sum_value=self._sum)
        st = t.stats
        c = CounterMetricFamily("harness_target_events", "Target events by kind", labels=["kind"])
        for kind, value in (("shed-tenant", st.shed_tenant), ("shed-overload", st.shed_overload),
                            ("expired", st.expired), ("lost", st.lost),
                            ("redispatched", pool.stats.redispatched)):
            c.add_metric([kind], value)
        if t.dedupe is not None:
            c.add_metric(["dedupe-coalesced"], t.dedupe.stats.coalesced)
            c.add_metric(["dedupe-replayed"], t.dedupe.stats.replayed)
            c.add_metric(["dedupe-conflicts"], t.dedupe.stats.conflicts)
            c.add_metric(["dedupe-refused"], t.dedupe.stats.refused)
        if t.cache is not None:
            c.add_metric(["cache-hit"], t.cache.stats.hits)
            c.add_metric(["cache-lookup"], t.cache.stats.lookups)
        canary = getattr(t, "canary", None)
        if canary is not None:  # a rollout: attempts sent to the canary, cache hits of the other version
            c.add_metric(["canary-routed"], canary.stats.routed)
            c.add_metric(["cache-wrong-version"], canary.stats.wrong_version)
        yield c
        entries = GaugeMetricFamily("harness_state_entries", "Entries in a bounded per-request/per-tenant structure",
                                    labels=["structure"])
        limit = GaugeMetricFamily("harness_state_limit", "Most entries a bounded structure may hold",
                                  labels=["structure"])
        ttl = GaugeMetricFamily("harness_state_ttl_seconds", "How long a bounded structure keeps an entry",
                                labels=["structure"])
        for name, n, most, ttl_s in _bounds(t, self.metrics):
            entries.add_metric([name], n)
            limit.add_metric([name], most)
            if ttl_s is not None:
                ttl.add_metric([name], ttl_s)
        yield entries
        yield limit
        yield ttl


class _ProxyCollector:
    """Reads the L4 proxy's connection table and counters at scrape time."""

    def __init__(self, proxy: Any) -> None:
        self.proxy = proxy

    def collect(self):
        from targets.http.conn_table import Phase

        p, s = self.proxy, self.proxy.stats
        conns = GaugeMetricFamily("harness_proxy_connections", "Open client connections at the proxy, by phase",
                                  labels=["phase"])
        for phase in Phase:
            conns.add_metric([phase.value], p.table.count(phase))
        yield conns
        yield GaugeMetricFamily("harness_proxy_clients", "Distinct client addresses connected", value=p.table.clients)
        lim = GaugeMetricFamily("harness_proxy_limit", "The proxy's connection limits and timeouts", labels=["limit"])
        for name in ("max_connections", "max_connections_per_client", "idle_timeout_s", "header_timeout_s",
                     "body_timeout_s"):
            lim.add_metric([name], getattr(p.limits, name))
        yield lim
        refused = CounterMetricFamily("harness_proxy_refused", "Connections refused at once (503)", labels=["reason"])
        refused.add_metric(["per-client-cap"], s.refused_client)
        refused.add_metric(["total-cap"], s.refused_total)
        yield refused
        yield CounterMetricFamily("harness_proxy_shed", "Requests the proxy answered 503 itself, not relayed: the"
                                  " front end's requests in flight had waited too long (hardened's guard)",
                                  value=s.refused_overload)
        closed = CounterMetricFamily("harness_proxy_closed", "Connections the proxy closed, or lost, by reason",
                                     labels=["reason"])
        for reason, value in (("evicted-idle", s.evicted), ("header-timeout", s.header_timeouts),
                              ("idle-timeout", s.idle_timeouts), ("client-reset", s.dropped),
                              ("backend-failed", s.failed)):
            closed.add_metric([reason], value)
        yield closed
        yield CounterMetricFamily("harness_proxy_accepted", "Connections accepted", value=s.accepted)


class _BalancerCollector:
    """Reads HAProxy's `show stat` at scrape time: the proxy's series where HAProxy has them (its own
    503s are `harness_proxy_shed`, which the shed-ratio alert adds to the API servers' sheds)."""

    def __init__(self, balancer: Any) -> None:
        self.balancer = balancer

    def collect(self):
        s = self.balancer.stats()
        if "error" in s:
            return
        yield CounterMetricFamily("harness_proxy_shed", "Requests the balancer answered 5xx itself, not relayed "
                                  "(HAProxy: queued past its timeout queue)", value=s["own_5xx"])
        yield CounterMetricFamily("harness_proxy_accepted", "Connections accepted", value=s["connections"])
        yield GaugeMetricFamily("harness_balancer_queue", "Requests waiting in HAProxy's queue for an API server",
                                value=s["queue_now"])

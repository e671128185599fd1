"""The client policy: what callers of the API do (doc item 4 is about them).

Naive clients retry at once on timeout, with no request ID, no backoff and no
limit but the retry count. Hardened clients send a request ID and a deadline,
back off exponentially with full jitter (AWS Architecture Blog, "Exponential
Backoff And Jitter", 2015), honour Retry-After, and spend at most a budget of
retries relative to their first attempts (gRPC's retry throttling idea), so a
slow server is not buried under its own clients' retries. Past a server's
capacity they also throttle themselves (adaptive throttling, Google's SRE book,
"Handling Overload"): a request that the recent past says would be refused is
refused at the client, which costs neither side a connection, a parse or a reply,
so the server's refusals stop eating the CPU its answers need.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from targets.config import Backoff, ClientKnobs
from targets.delayline import Clock, clock_of
from targets.native import mypyc_attr
from targets.protocol import BAD_REQUEST, OK, UNAVAILABLE, Attempt, Response, Status
from targets.throttle import RetryBudget, Throttle


@mypyc_attr(native_class=False)  # a plain class when compiled too: it is pickled to driver processes
@dataclass(frozen=True)
class ClientPolicy:
    timeout_s: float
    retries: int
    backoff: Backoff
    backoff_base_s: float
    backoff_cap_s: float
    request_ids: bool
    retry_budget: float | None
    honour_retry_after: bool
    propagate_deadline: bool
    throttle_k: float | None = None
    throttle_window_s: float = 2.0

    @classmethod
    def from_target(cls, c: ClientKnobs) -> "ClientPolicy":
        """The policy a target's client knobs describe (a whole TargetConfig is a ClientKnobs)."""
        return cls(
            timeout_s=c.client_timeout_s,
            retries=c.client_retries,
            backoff=c.client_backoff,
            backoff_base_s=c.backoff_base_s,
            backoff_cap_s=c.backoff_cap_s,
            request_ids=c.request_ids,
            retry_budget=c.retry_budget,
            honour_retry_after=c.honour_retry_after,
            propagate_deadline=c.propagate_deadline,
            throttle_k=c.client_throttle_k,
            throttle_window_s=c.client_throttle_window_s,
        )

    def delay_s(self, retry_no: int, response: Response, rng: random.Random) -> float:
        """Pause before retry number `retry_no` (1-based) after `response`."""
        return retry_delay_s(self.backoff is Backoff.EXPONENTIAL, self.backoff_base_s, self.backoff_cap_s,
                             self.honour_retry_after, retry_no, response, rng)

    def retryable(self, response: Response) -> bool:
        """Naive clients retry on timeout and errors (and so on a shed too)."""
        return retryable(response)


# The policy's two rules as functions of plain values: ClientPolicy's methods call them, and so
# does the Client with the policy's fields copied into it (compiled: native calls, where a
# method of the plain ClientPolicy is a Python call that reads each field from a dict).

def retry_delay_s(exponential: bool, base_s: float, cap_s: float, honour_retry_after: bool, retry_no: int,
                  response: Response, rng: random.Random) -> float:
    """Pause before retry number `retry_no` (1-based) after `response`."""
    delay = 0.0
    if exponential:
        # rng.uniform(0.0, high), written out as random.Random.uniform computes it: uniform is
        # pure Python, an interpreted call per retry; random() is C
        low, high = 0.0, min(cap_s, base_s * 2 ** (retry_no - 1))
        delay = low + (high - low) * rng.random()
    if honour_retry_after and response.retry_after_s:
        delay = max(delay, response.retry_after_s)
    return delay


def retryable(response: Response) -> bool:
    """Naive clients retry on timeout and errors (and so on a shed too)."""
    status = response.status
    return status is not OK and status is not BAD_REQUEST


class Transport(Protocol):
    """The one seam between clients and targets.

    `send` delivers `attempt` and arranges for `on_done(response)` to be called
    exactly once: with the target's Response, or with Status.TIMEOUT if none
    came within `timeout_s`. Callback rather than coroutine, so that a
    simulation needs no task per request (see targets.protocol).
    """

    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None: ...


@mypyc_attr(allow_interpreted_subclasses=True)  # a test's wrapper of the sim's transport keeps its path
class TransportBase:
    """A Transport as a base class (the sim's, harness.engine.transports.InProcessTransport):
    compiled, the client hands each attempt to a transport derived from it by a native call,
    `send_owned`, and takes its answer through the attempt's `owner` (its request), with no
    callback; any other Transport (live mode's) is called through its bound `send`."""

    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None:
        raise NotImplementedError

    def send_owned(self, attempt: Attempt, timeout_s: float) -> None:
        """`send` of an attempt whose answer goes to its `owner` (`Attempt.answer`), not to a callback."""
        raise NotImplementedError


class Sink(Protocol):
    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None: ...
    def finish(self, index: int, status: Status, done_s: float, attempts: int) -> None: ...


class SinkBase:
    """A Sink as a base class (the recorder's, harness.engine.recorder): compiled, the client's
    calls of a sink derived from it, two per request, are native calls; any other Sink is called
    through its bound methods."""

    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None:
        raise NotImplementedError

    def finish(self, index: int, status: Status, done_s: float, attempts: int) -> None:
        raise NotImplementedError


class Finished:
    """What a Client calls once a request has its final answer, as a base class (the driver's
    count of finished requests, harness.engine.driver): compiled, the client's call, once a
    request, is then a native call; any other `on_finished` is called as the callable it is."""

    def finished(self) -> None:
        raise NotImplementedError

    def __call__(self) -> None:
        self.finished()


class _PerTenant:
    """A client's state for one tenant: its retry budget and its throttles by size class
    (index: the size's bit length)."""

    def __init__(self, tenant: str) -> None:
        self.budget: RetryBudget | None = None
        self.throttles: list[Throttle | None] = []


class Client:
    """Runs requests to their final answers under a ClientPolicy.

    `on_finished()` is called once per request when it has its final answer.
    """

    def __init__(self, policy: ClientPolicy, transport: Transport, sink: Sink, rng: random.Random,
                 on_finished: Callable[[], None] | None = None) -> None:
        self.policy = policy
        self.transport = transport
        self.sink = sink
        self.rng = rng
        self.on_finished = on_finished
        self._native_finished: Finished | None = on_finished if isinstance(on_finished, Finished) else None
        self.budgets: dict[str, RetryBudget] = {}
        self.throttles: dict[tuple[str, int], Throttle] = {}
        # The same budgets and throttles by tenant, as `start` finds them: one lookup by the
        # tenant's name, then the throttle by size class from a list (no key tuple).
        self._per_tenant: dict[str, _PerTenant] = {}
        self.throttled = 0  # requests refused at the client (adaptive throttling)
        self.loop = asyncio.get_running_loop()
        # Read once: a simulation calls these for every attempt (the clock natively, see clock_of).
        self._clock: Clock = clock_of(self.loop)
        self._send = transport.send
        self._native_transport: TransportBase | None = transport if isinstance(transport, TransportBase) else None
        self._record_attempt = sink.attempt
        self._record_finish = sink.finish
        self._native_sink: SinkBase | None = sink if isinstance(sink, SinkBase) else None
        # The policy's fields read per request, copied into attributes of this (compiled: native)
        # class: ClientPolicy is a plain class, whose every attribute read is a dict lookup.
        self._timeout_s: float = policy.timeout_s
        self._retries: int = policy.retries
        self._request_ids: bool = policy.request_ids
        self._deadlines: bool = policy.propagate_deadline
        self._throttle_k: float | None = policy.throttle_k
        self._retry_budget: float | None = policy.retry_budget
        self._exponential: bool = policy.backoff is Backoff.EXPONENTIAL
        self._backoff_base_s: float = policy.backoff_base_s
        self._backoff_cap_s: float = policy.backoff_cap_s
        self._honour_retry_after: bool = policy.honour_retry_after

    def start(self, index: int, tenant: str, conn: int, content: int, variant: int, size: int, payload: Any = None) -> None:
        sent = self._clock.now()
        throttle = None
        throttle_k = self._throttle_k
        ratio = self._retry_budget
        per: _PerTenant | None = None
        if throttle_k is not None or ratio is not None:
            per = self._per_tenant.get(tenant)
            if per is None:
                per = self._per_tenant[tenant] = _PerTenant(tenant)
        if throttle_k is not None and per is not None:
            # One throttle per tenant and size class (sizes within a factor of two): a tenant's
            # clients share what they saw, and a server that refuses large requests (admission
            # predicts their batches too slow) does not get a tenant's small ones throttled.
            bits = size.bit_length()
            by_size = per.throttles
            if bits >= len(by_size):
                by_size.extend([None] * (bits + 1 - len(by_size)))
            throttle = by_size[bits]
            if throttle is None:
                throttle = by_size[bits] = self.throttles[(tenant, bits)] = Throttle(
                    throttle_k, self.policy.throttle_window_s)
            chance = throttle.reject_probability(sent)
            if chance > 0.0 and self.rng.random() < chance:
                self.throttled += 1
                self._record_finish(index, UNAVAILABLE, sent, 0)  # refused here: no attempt was sent
                self._finished()
                return
        budget = None
        if ratio is not None and per is not None:
            budget = per.budget
            if budget is None:
                budget = per.budget = self.budgets[tenant] = RetryBudget(ratio)
            budget.record_first()
        # Positional: this runs once per request (uid, tenant, conn, content, variant, size,
        # sent_s, attempt_no, on_answer, request_id, deadline_s, payload). The request ID is the
        # request's number (unique in the run; the tenant's name with it, on the wire: see
        # harness.live.http_transport): a number costs no string per request.
        r = _Request(index, tenant, conn, content, variant, size, sent, 0, None,
                     index if self._request_ids else None,
                     sent + self._timeout_s if self._deadlines else None, payload)
        r.client, r.budget, r.throttle, r.tries, r.sent = self, budget, throttle, 0, sent
        if self._native_transport is None:
            r.on_answer = r.answer_fn = r.on_response
        else:
            r.answer_fn = None  # (its attempts are its own: see _send_attempt)
        self._send_attempt(r, r)

    def _finished(self) -> None:
        """A request has its final answer: tell `on_finished` (natively where it is a Finished)."""
        native = self._native_finished
        if native is not None:
            native.finished()
        elif self.on_finished is not None:
            self.on_finished()

    def _send_attempt(self, a: Attempt, r: _Request) -> None:
        """Hand `a`, an attempt of `r`, to the transport: natively where it is a TransportBase (the
        sim's), `r` owning `a` (its answer is then a native call of `r.on_response`); else with
        `r`'s bound `on_response` as the callback."""
        native = self._native_transport
        if native is not None:
            a.owner = r
            native.send_owned(a, self._timeout_s)
            return
        answer = r.answer_fn
        if answer is None:  # (only a retry sent after the final answer would find it gone)
            answer = r.on_response
        a.on_answer = answer
        self._send(a, self._timeout_s, answer)


class _Request(Attempt):
    """One user request's life (attempts, pauses, the final answer), and its first
    attempt: one object per request rather than two, as a simulation makes hundreds
    of thousands. A retry is a plain Attempt, answered through `on_response`.

    On a TransportBase (the sim's) the request owns its attempts (`Attempt.owner`), the first
    one itself: a reference cycle, which `on_response` breaks at that attempt's answer
    (attempts are sequential, so the first answer is the first attempt's), so that reference
    counting frees the request as soon as the target lets go of it. Elsewhere (live), the first
    attempt's `on_answer` is this object's own `on_response`, the same cycle broken the same
    way, and `answer_fn` keeps that bound method for the retries (one per request, not one per
    attempt: in a retry storm the attempts parked in a backlog are most of the memory), another
    cycle, which the final answer breaks.
    """

    client: Client
    answer_fn: Callable[[Response], None] | None
    budget: RetryBudget | None
    throttle: Throttle | None
    tries: int
    sent: float

    def send(self) -> None:
        """Send the next attempt (a retry)."""
        c = self.client
        timeout_s = c._timeout_s
        sent = self.sent = c._clock.now()  # a retry is sent whatever the throttle says: the budget bounds it
        a = Attempt(self.uid, self.tenant, self.conn, self.content, self.variant, self.size, sent,
                    self.tries, None, self.request_id,
                    sent + timeout_s if c._deadlines else None, self.payload)
        c._send_attempt(a, self)

    def on_response(self, response: Response) -> None:
        self.on_answer = self.owner = None  # see the class docstring
        c = self.client
        now = c._clock.now()
        self.tries = tries = self.tries + 1
        status = response.status
        sent = self.sent
        sink = c._native_sink
        if sink is not None:
            sink.attempt(status, sent, now - sent)
        else:
            c._record_attempt(status, sent, now - sent)
        throttle = self.throttle
        if throttle is not None:  # counted as it ends, so a request in flight is not taken for a refusal
            # an answer, not a refusal or silence: the server accepted it
            throttle.ended(now, status is OK or status is BAD_REQUEST)
        if (
            status is OK
            or tries > c._retries
            or not retryable(response)
            or (self.budget is not None and not self.budget.try_spend())
        ):
            self.answer_fn = None  # the last attempt answered: the retries' cycle, broken
            if sink is not None:
                sink.finish(self.uid, status, now, tries)
            else:
                c._record_finish(self.uid, status, now, tries)
            c._finished()
            return
        delay = retry_delay_s(c._exponential, c._backoff_base_s, c._backoff_cap_s, c._honour_retry_after, tries,
                              response, c.rng)
        if delay > 0:
            c.loop.call_later(delay, self.send)
        else:
            self.send()

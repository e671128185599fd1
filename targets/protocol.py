"""The plain types that cross the seam between clients and targets.

An `Attempt` is one try of one user request; the user's request is identified
for accounting by `uid`, which the target's policies must never read (the
design doc's requests carry no identifier: only `request_id`, when the client
sends one, may be used for dedupe). A target answers every attempt it keeps
with a `Response` through `attempt.answer`; an attempt it loses (a dead GPU)
is never answered, and the client finds out only by timing out.

Answers are delivered by callback (or, in the sim, by a native call of the
owning request's `on_response`) rather than through an asyncio Future: a
simulation makes hundreds of thousands of attempts per second, and a Future
plus its scheduled done-callback roughly doubles what each one costs.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Callable, Final, Hashable


class Status(IntEnum):
    """HTTP-like status of an attempt; TIMEOUT is the client's own verdict."""

    TIMEOUT = 0
    OK = 200
    BAD_REQUEST = 400
    TOO_MANY = 429
    ERROR = 500
    UNAVAILABLE = 503

    @property
    def shed(self) -> bool:
        return self is TOO_MANY or self is UNAVAILABLE


# An Enum member lookup (`Status.OK`) costs about 0.5 us in CPython 3.11 (the enum
# metaclass), and a simulation makes several per request: hot paths use these names.
# Final: compiled (targets.native), a final name is a C static, not a lookup in the
# module's dict; so are the other module-level constants the core reads per request.
TIMEOUT: Final = Status.TIMEOUT
OK: Final = Status.OK
BAD_REQUEST: Final = Status.BAD_REQUEST
TOO_MANY: Final = Status.TOO_MANY
ERROR: Final = Status.ERROR
UNAVAILABLE: Final = Status.UNAVAILABLE


class Response:

    def __init__(
        self,
        status: Status,
        retry_after_s: float | None = None,
        cached: bool = False,
        output: Any = None,
        reason: str = "",
    ) -> None:
        self.status = status
        self.retry_after_s = retry_after_s
        self.cached = cached
        self.output = output
        self.reason = reason

    def __repr__(self) -> str:
        return f"Response({self.status.name}, retry_after_s={self.retry_after_s}, cached={self.cached})"


OK_RESPONSE: Final = Response(Status.OK)
TIMEOUT_RESPONSE: Final = Response(Status.TIMEOUT, reason="client timeout")


class Keeper:
    """What holds an attempt only until it is answered: a line of client timeouts
    (targets.delayline), which lets go of the attempt at its answer (`release`), so that an
    attempt answered in milliseconds is freed then, not when its timeout would have fallen due
    (a second on, by which time its memory is cold). A base class: compiled, the answer's
    call is native."""

    def release(self, a: Attempt) -> None:
        raise NotImplementedError


class Attempt:
    """One try of one request, as the target sees it.

    Times are loop seconds. `deadline_s` is absolute and set only when the
    client propagates deadlines. The answer goes, at most once, to `owner.on_response`
    where the attempt has an owner (a sim client's request), else to `on_answer(response)`;
    `done` is set once answered or given up on; `abandoned` once the client
    gave up (timed out), which a target may not see (there is no cancel in
    the doc's protocol) but the harness uses to count wasted GPU work.
    """

    def __init__(
        self,
        uid: int,
        tenant: str,
        conn: int,
        content: int,
        variant: int,
        size: int,
        sent_s: float,
        attempt_no: int,
        on_answer: Callable[[Response], None] | None = None,
        request_id: str | int | None = None,
        deadline_s: float | None = None,
        payload: Any = None,
    ) -> None:
        self.uid = uid
        self.request_id = request_id
        self.tenant = tenant
        self.conn = conn
        self.content = content
        self.variant = variant
        self.size = size
        self.deadline_s = deadline_s
        self.sent_s = sent_s
        self.enqueued_s = sent_s
        self.attempt_no = attempt_no
        self.on_answer = on_answer
        self.done = False
        self.abandoned = False
        self.redispatched = False
        self.payload = payload
        self.server = -1
        self.dedupe_key: Hashable | None = None  # a dedupe's key for it, once offered (targets.dedupe)
        # The attempt whose `on_response` takes this one's answer in place of `on_answer`: a sim
        # client's request (targets.client), which owns its attempts. Compiled, that is a native
        # call, where `on_answer` is a Python-level call of a bound method made per request.
        self.owner: Attempt | None = None
        # What holds this attempt until its answer (a Keeper: a line of client timeouts), and
        # where there (the keeper's own count): let go of at the answer.
        self.keeper: Keeper | None = None
        self.kept_at = -1

    def answer(self, response: Response) -> None:
        """Deliver `response` unless the attempt was already answered or abandoned."""
        if not self.done:
            self.done = True
            keeper = self.keeper
            if keeper is not None:
                self.keeper = None
                keeper.release(self)
            self.deliver(response)

    def deliver(self, response: Response) -> None:
        """Hand `response` to whoever waits on this attempt, its owner natively or `on_answer`,
        without `answer`'s check (a client timeout delivers to an attempt it has given up on)."""
        owner = self.owner
        if owner is not None:
            owner.on_response(response)
        else:
            self.on_answer(response)  # type: ignore[misc]  # set until answered

    def on_response(self, response: Response) -> None:
        """The answer to an attempt this one owns (`owner`): a client's request's to define."""
        raise NotImplementedError

    def give_up(self) -> bool:
        """The client stops waiting (timeout). True if it was still waiting."""
        if self.done:
            return False
        self.done = True
        self.abandoned = True
        return True

    def __repr__(self) -> str:
        return f"Attempt(uid={self.uid}, try={self.attempt_no}, tenant={self.tenant!r})"


def longest(batch: list[Attempt]) -> int:
    """The longest input of a batch (its cost model's length); 0 for none. Compiled, a native
    loop over the attempts' sizes, where `max(map(attrgetter("size"), batch))` made a generic
    attribute read and a boxed int per attempt (an executor asks once per batch)."""
    most = 0
    for a in batch:
        if a.size > most:
            most = a.size
    return most


class DeadlineCheck:
    """Deadline propagation's test, asked of every queued request before it costs GPU time: an
    attempt is useless once even a batch started now (`margin_s`, a batch's time) would end past
    its deadline. A class, not a callable, so that the batcher and the pool ask it natively."""

    def __init__(self, margin_s: float) -> None:
        self.margin_s = margin_s

    def expired(self, a: Attempt, now: float) -> bool:
        deadline = a.deadline_s
        return deadline is not None and now + self.margin_s > deadline

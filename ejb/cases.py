"""The subjob-submission cases of section 3.2 and the J0 options of section 3.3, as pure functions.

Each function looks at a target job, its started subjobs and the immediately backfillable
slots, and returns the best :class:`Choice` (the subjob shapes to submit and the estimated
completion ``A_t.T_c``), or ``None``. Completion times always come from the progress model
(:func:`ejb.progress.build_plan`), so the WAIT cases, the RUNNING cases and the simulator's
progress tracking use one and the same arithmetic.

A subjob that must last until the application completes ("long", ``limit=None`` below) gets
``R_x = T_c - T_now``: the plan is computed with an open end and the limit set from it.
A "short" subjob fills a type-II slot exactly (``R_x = R_max``) and is migrated out λ before
it ends.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ejb.model import Member, Target
from ejb.params import EJBParams
from ejb.progress import Plan, build_plan, procs_for, runtime_on
from ejb.slots import Slots

_EPS = 1e-6


@dataclass(frozen=True, slots=True)
class NewSubjob:
    procs: int
    limit: float  # R_x, seconds


@dataclass(frozen=True, slots=True)
class Choice:
    """A schedule to adopt: the subjobs to submit, its estimated completion and its cost."""

    case: str
    subjobs: tuple[NewSubjob, ...]
    completion: float
    plan: Plan

    @property
    def cost(self) -> float:
        """Processor-seconds requested by the new subjobs (tie-breaker: cheaper wins)."""
        return sum(s.procs * s.limit for s in self.subjobs)


def _key(c: Choice) -> tuple[float, float]:
    return (c.completion, c.cost)


def evaluate(
    target: Target,
    params: EJBParams,
    launch: float,
    members: Sequence[Member],
    now: float,
    new: Sequence[tuple[int, float | None]],
    case: str,
) -> Choice | None:
    """Completion if subjobs ``new`` = ``(procs, limit or None for long)`` start at ``now``.

    New subjobs join a running application (``launch < now``) through a migration of λ;
    at launch (``launch == now``) they start together without one.
    """
    join = launch < now
    base = list(members)
    trial = base + [
        Member(-1 - i, p, now, math.inf if lim is None else now + lim, join) for i, (p, lim) in enumerate(new)
    ]
    plan = build_plan(target, params, launch, trial)
    if math.isinf(plan.completion):
        return None
    long_limit = plan.completion - now
    shapes = tuple(NewSubjob(p, long_limit if lim is None else lim) for p, lim in new)
    if any(s.limit <= 0 or s.procs <= 0 for s in shapes):
        return None
    final = base + [Member(-1 - i, s.procs, now, now + s.limit, join) for i, s in enumerate(shapes)]
    plan = build_plan(target, params, launch, final)
    if math.isinf(plan.completion):
        return None
    return Choice(case, shapes, plan.completion, plan)


def wait_cases(target: Target, params: EJBParams, slots: Slots) -> Choice | None:
    """Section 3.2.1, ``J_e.Stat = WAIT``: cases 1-3 of Figure 4; earliest completion wins.

    Slot sizes are turned into subjob sizes with :func:`procs_for` (fewest processors at
    the same degree of over-subscription ``ceil(P_t/P_max)``). Case 3's second subjob fills
    the type-II slot exactly (``R = R_max``) so that the migration back to ``J_1`` (λ)
    happens before it ends.
    """
    now = slots.now
    s1, s2 = slots.type1, slots.type2
    options: list[Choice] = []
    q1 = procs_for(target, s1.procs, params) if s1 else 0
    q2 = procs_for(target, s2.procs, params) if s2 else 0
    if q1 > 0:  # case 1: one subjob in the type-I slot, no time bound
        c = evaluate(target, params, now, [], now, [(q1, None)], "wait-1")
        if c:
            options.append(c)
    if q2 > 0 and s2 is not None and runtime_on(target, q2, params) <= s2.duration + _EPS:
        c = evaluate(target, params, now, [], now, [(q2, None)], "wait-2")  # case 2
        if c and c.subjobs[0].limit <= s2.duration + _EPS:
            options.append(c)
    if (
        q1 > 0
        and s2 is not None
        and q2 > q1
        and runtime_on(target, q2, params) < runtime_on(target, q1, params)
        and s2.duration > params.migration
    ):  # case 3: J1 in S1 until completion, J2 in the rest of S2 until the shadow time
        c = evaluate(target, params, now, [], now, [(q1, None), (q2 - q1, s2.duration)], "wait-3")
        if c:
            options.append(c)
    return min(options, key=_key) if options else None


def _sizes(target: Target, current: int, room: int) -> list[int]:
    """Candidate sizes for a new subjob: the largest, and the smallest reaching each degree."""
    if room <= 0:
        return []
    out = {room}
    seen: set[int] = set()
    for q in range(current + room, current, -1):
        d = math.ceil(target.procs / q)
        if d not in seen:
            seen.add(d)
            out.add(math.ceil(target.procs / d) - current)
    return sorted(p for p in out if 0 < p <= room)


def running_cases(
    target: Target,
    params: EJBParams,
    launch: float,
    members: Sequence[Member],
    current_procs: int,
    current_completion: float,
    slots: Slots,
) -> Choice | None:
    """Section 3.2.2, ``J_e.Stat = RUNNING``: cases 1-3, only if ``T_c`` improves.

    Case 1: a long subjob ``R_x = new T_c - T_now`` in a type-I slot, or in a type-II slot
    whose ``R_max`` is long enough. Case 2: a short subjob filling a type-II slot
    (expansion now, shrinkage migration before it ends). Case 3: both at once.
    ``current_procs`` are the processors of ``J_e``'s running subjobs; at most
    ``P_t - current_procs`` more are requested.
    """
    now = slots.now
    room = target.procs - current_procs
    if room <= 0:
        return None
    s1, s2 = slots.type1, slots.type2
    options: list[Choice] = []

    def add(c: Choice | None) -> None:
        if c is not None and c.completion < current_completion - _EPS:
            options.append(c)

    if s1:
        for p in _sizes(target, current_procs, min(s1.procs, room)):
            add(evaluate(target, params, launch, members, now, [(p, None)], "run-1"))
    if s2:
        for p in _sizes(target, current_procs, min(s2.procs, room)):
            c = evaluate(target, params, launch, members, now, [(p, None)], "run-1")
            if c and c.subjobs[0].limit <= s2.duration + _EPS:
                add(c)
            if s2.duration > 2 * params.migration:
                add(evaluate(target, params, launch, members, now, [(p, s2.duration)], "run-2"))
    if s1 and s2 and s2.duration > 2 * params.migration:
        for p in _sizes(target, current_procs, min(s1.procs, room)):
            short = min(s2.procs - p, room - p)
            if short > 0:
                add(
                    evaluate(target, params, launch, members, now, [(p, None), (short, s2.duration)], "run-3")
                )
    return min(options, key=_key) if options else None


@dataclass(frozen=True, slots=True)
class J0Option:
    """What to do when the placeholder ``J_0`` starts (section 3.3)."""

    action: str  # "cancel-j0" | "migrate-all" | "restart"
    completion: float


def j0_options(
    target: Target,
    params: EJBParams,
    launch: float,
    members: Sequence[Member],
    j0_key: int,
    now: float,
    current_completion: float,
    progress: float | None = None,
    modelled: float | None = None,
) -> J0Option:
    """Earliest completion among: keep the subjobs and cancel J0, migrate everything to J0
    (the other subjobs are cancelled once the migration of λ is over), restart on J0.

    ``progress``: the fraction of the work the application reports done (live runs), with
    ``modelled`` the model's fraction for the same moment. Then keeping the subjobs takes the
    model's remaining time scaled by the work really left, and moving to J0 completes at
    ``now + λ + (1 - progress)·R`` (section 3.3's closed form, with J0 at full size)."""
    if progress is not None and modelled is not None and modelled < 1.0:
        left = (1.0 - progress) / (1.0 - modelled)
        options = [J0Option("cancel-j0", now + max(0.0, current_completion - now) * left)]
        options.append(J0Option("migrate-all", now + params.migration + (1.0 - progress) * target.limit))
    else:
        options = [J0Option("cancel-j0", current_completion)]
        moved = [Member(m.key, m.procs, m.start, min(m.end, now + params.migration), m.join) for m in members]
        moved.append(Member(j0_key, target.procs, now, now + target.limit, True))
        plan = build_plan(target, params, launch, moved)
        options.append(J0Option("migrate-all", plan.completion))
    options.append(J0Option("restart", now + target.limit))
    return min(options, key=lambda o: o.completion)

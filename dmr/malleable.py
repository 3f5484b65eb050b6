"""A step-loop helper in the spirit of DMR's ``DMR_AUTO``: the state travels by itself.

    m = dmr.Malleable(min_procs=1, max_procs=8, factor=2)
    if not m.joined:                     # first start, not a rank spawned by an expansion
        m.arrays["x"] = my_block()       # block-distributed along axis 0
        m.values["alpha"] = 0.5          # replicated (rank 0's value wins)
    for step in m.steps(25):             # asks the service before each step
        compute(m.comm, m.arrays["x"], step)

At each reconfiguring point the helper calls ``check_status`` (or ``icheck_status`` with
``asynchronous=True``); on expand the spawned ranks start the same program, join inside
``Malleable(...)``, receive ``values``, their block of every array and the step counter,
and continue the loop at the same step; on shrink the leaving ranks hand their blocks to
the staying ones and exit inside ``steps()``. Under ``dmr-run --on-failure continue`` the state is
also sent to the job's agent every few steps (:mod:`dmr.checkpoint`); after a failed rank the
application is started again on the other nodes and ``Malleable(...)`` comes back ``joined`` with
that state and step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from mpi4py import MPI

from dmr import checkpoint
from dmr.api import runtime
from dmr.config import validate
from dmr.runtime import Action, Reconfiguration


class Malleable:
    def __init__(
        self,
        min_procs: int,
        max_procs: int,
        factor: int = 2,
        preferred: int | None = None,
        asynchronous: bool = False,
    ) -> None:
        self.runtime = runtime()
        validate(min_procs, max_procs, factor, preferred, self.runtime.size)
        self.spec = (min_procs, max_procs, factor, preferred)
        self.asynchronous = asynchronous
        self.arrays: dict[str, np.ndarray] = {}
        self.values: dict[str, Any] = {}
        self.step = 0
        self.history: list[tuple[int, str, int, int, float]] = []  # (step, action, old, new, seconds)
        self._t0 = time.perf_counter()
        self._skip_check = False
        self._restored_at: int | None = None  # the step a restart after a failure resumed at
        self._checkpoint_every = checkpoint.every()  # the agent's setting: fixed for the run
        handle = self.runtime.joining
        self.joined = handle is not None
        if handle is not None:
            self._carry(handle)
            self._skip_check = True  # the parents already asked at this step
        elif (state := checkpoint.restore(self.runtime)) is not None:
            self.step, self.arrays, self.values = state
            self.joined = True  # the application's set-up is in the state: not done again
            self._restored_at = self.step
            self._skip_check = True  # no resize at this step: every rank skips its checkpoint alike

    @property
    def comm(self) -> MPI.Intracomm:
        return self.runtime.comm

    @property
    def rank(self) -> int:
        return self.runtime.rank

    @property
    def size(self) -> int:
        return self.runtime.size

    def check(self, spec: tuple[int, int, int] | None = None) -> Action:
        """One reconfiguring point: ask, and carry the state over if the answer is a resize.

        ``spec``: (min, max, factor) for this call only (default: the constructor's).
        """
        lo, hi, factor, preferred = self.spec
        if spec is not None:
            lo, hi, factor = spec
            preferred = None
        self._t0 = time.perf_counter()
        action, _, handle = self.runtime.check(lo, hi, factor, preferred, self.asynchronous)
        if handle is not None:
            self._carry(handle)
        return action

    def steps(
        self, total: int, spec: Callable[[int], tuple[int, int, int] | None] | None = None
    ) -> Iterator[int]:
        """Yield step numbers up to ``total``, with a reconfiguring point before each one.

        ``spec(step)``: (min, max, factor) to ask with at that step, or None for the default.
        """
        try:
            while self.step < total:
                self.runtime.progress = self.step / total if total else None
                if not self._skip_check:
                    self.check(spec(self.step) if spec is not None else None)
                self._skip_check = False
                every = self._checkpoint_every
                if every and self.step % every == 0 and self.step != self._restored_at:
                    checkpoint.save(self.runtime, self.step, self.arrays, self.values)
                yield self.step
                self.step += 1
        finally:
            if not self.runtime.world.left:
                self.runtime.close()

    def _carry(self, handle: Reconfiguration) -> None:
        state = handle.bcast(
            {"names": sorted(self.arrays), "values": self.values, "step": self.step}
            if handle.rank == 0
            else None
        )
        self.values = dict(state["values"])
        self.step = int(state["step"])
        for name in state["names"]:
            self.arrays[name] = handle.redistribute(self.arrays.get(name))
        handle.finish(exit=True)
        self.runtime.step_started = time.perf_counter()  # the next step's time excludes the resize
        took = time.perf_counter() - self._t0
        self.history.append((self.step, handle.action.value, handle.old_size, handle.new_size, took))

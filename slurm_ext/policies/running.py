"""A running job as the policies' working copy holds it (:class:`Running`).

Its own module because the availability profile (:mod:`slurm_ext.policies.profile`) is built
from these entries too, and the working copy (:mod:`slurm_ext.policies.working_view`) needs both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurm_ext.model import MalleableSpec


@dataclass(slots=True, init=False)
class Running:
    """A running job in the working copy: current size and expected end, and what the policies
    read of its job (fields, not the Job: the simulator builds these from its columns, see
    ``slurm_ext.sim.snapshot.build_view``)."""

    job_id: int
    size: int
    end: float
    spec: MalleableSpec | None  # the job's malleable range, None if rigid
    start: float  # start time (0.0 if unknown)
    submit: float
    limit: float | None  # the job's current time limit (None: unlimited)
    ask: int | None  # target size of an open evolving request
    # the spec's bounds, read at every min/max (millions of times a run): a field of this class
    # reads directly in the compiled build, the spec's through Python's attribute lookup
    _lo: int = field(repr=False, compare=False)
    _hi: int = field(repr=False, compare=False)

    # Written out: mypyc compiles this one to C, where the dataclass's generated __init__ runs as
    # Python (half the cost of building the working copy's entries, one per start and resize).
    def __init__(
        self,
        job_id: int,
        size: int,
        end: float,
        spec: MalleableSpec | None,
        start: float,
        submit: float,
        limit: float | None,
        ask: int | None = None,
    ) -> None:
        self.job_id = job_id
        self.size = size
        self.end = end
        self.spec = spec
        self.start = start
        self.submit = submit
        self.limit = limit
        self.ask = ask
        if spec is None:
            self._lo = self._hi = 0
        else:
            self._lo = spec.min_nodes if spec.min_nodes > 1 else 1
            self._hi = spec.max_nodes

    @property
    def malleable(self) -> bool:
        # an evolving job is not malleable: the scheduler may only grant or refuse its ask
        return self.spec is not None and self.ask is None

    # min and max are read for every running job many times per decision: no helper calls
    @property
    def min(self) -> int:
        # A job never shrinks below its min, nor below 1.
        if self.spec is None or self.ask is not None:
            return self.size
        return self._lo

    @property
    def max(self) -> int:
        if self.spec is None or self.ask is not None:
            return self.size
        return self._hi

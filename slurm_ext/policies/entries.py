"""What the policies' working copy holds of each job: :class:`Running` and :class:`Queued`.

Fields, not the :class:`~slurm_ext.model.Job`: the simulator builds these from its columns (see
``slurm_ext.sim.snapshot.build_view``), a live snapshot's copy from its Jobs, and in the
compiled build a field of these classes reads directly where a Job's goes through Python's
attribute lookup. Their own module because the availability profile
(:mod:`slurm_ext.policies.profile`) is built from the running entries too.
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


@dataclass(slots=True, init=False)
class Queued:
    """A pending job in the working copy, in queue order: the fields of its Job that the policies
    read (same names), and the fewest and most nodes it can start on. Read only: the simulator
    keeps one per queued job and hands the same entry to every call (as it does a Job)."""

    job_id: int
    node_count: int  # the nodes it asked for
    submit_time: float
    start_time: float | None  # the expected start a live snapshot may show; None in the simulator
    time_limit: float | None  # requested time at ``node_count`` nodes (None: unlimited)
    malleable: MalleableSpec | None
    min_nodes: int  # ``malleable.min_nodes`` if malleable, else ``node_count``
    max_nodes: int  # ``malleable.max_nodes`` if malleable, else ``node_count``

    # Written out, as Running's (one per queued job of a run).
    def __init__(
        self,
        job_id: int,
        node_count: int,
        submit_time: float,
        start_time: float | None,
        time_limit: float | None,
        malleable: MalleableSpec | None,
    ) -> None:
        self.job_id = job_id
        self.node_count = node_count
        self.submit_time = submit_time
        self.start_time = start_time
        self.time_limit = time_limit
        self.malleable = malleable
        if malleable is None:
            self.min_nodes = self.max_nodes = node_count
        else:
            self.min_nodes = malleable.min_nodes
            self.max_nodes = malleable.max_nodes

"""A rigid run's utilisation timeline, computed from its job table after the run.

At every instant it handles, a run has one timeline row: (time, busy nodes, running jobs, queued
jobs) as they stand after that instant's scheduling step (:meth:`Simulator.advance
<slurm_ext.sim.engine.Simulator.advance>`). In a run where jobs only arrive, start and end, and
each instant is handled once, those rows follow from the job table: the instants are the
arrival and end times, and at an instant a job is running iff it has started and not ended by
then, queued iff it has arrived and not started. Computing them once with numpy costs a fraction
of four appends at every instant, the tenth of a rigid run's time they took. The simulator
records rows as it goes instead wherever this does not hold (see ``Simulator._record_timeline``).
"""

from __future__ import annotations

from array import array

import numpy as np

from slurm_ext.sim.jobtable import JobTable

# time (float), busy nodes, running jobs, queued jobs (C longs: the simulator's recorded arrays)
Timeline = tuple[array, array, array, array]


def rigid_timeline(table: JobTable, arrived: int) -> Timeline:
    """The rows of a rigid run whose first ``arrived`` jobs have arrived (its table's other rows
    are jobs yet to arrive)."""
    sub = np.array(table.sub[:arrived], dtype=float)
    start = np.array(table.start_t[:arrived], dtype=float)
    end = np.array(table.end_t[:arrived], dtype=float)
    size = np.array(table.size[:arrived], dtype=np.int64)
    started, ended = start >= 0, end >= 0
    n_started, n_ended = int(started.sum()), int(ended.sum())
    # Every arrival, start and end as a change of (busy, running, queued) at its time; a start
    # happens at an arrival or an end, so the instants are these times. Each instant's row is
    # the running sum up to its last change (a stable sort keeps the order within one time).
    when = np.concatenate((sub, start[started], end[ended]))
    ones, zeros = np.ones(arrived, dtype=np.int64), np.zeros(arrived, dtype=np.int64)
    busy = np.concatenate((zeros, size[started], -size[ended]))
    running = np.concatenate((zeros, ones[:n_started], -ones[:n_ended]))
    queued = np.concatenate((ones, -ones[:n_started], zeros[:n_ended]))
    order = np.argsort(when, kind="stable")
    when = when[order]
    last = np.ones(len(when), dtype=bool)  # the last change at its time
    last[:-1] = when[1:] != when[:-1]
    return (
        array("d", when[last].tobytes()),
        array("l", np.cumsum(busy[order])[last].tobytes()),
        array("l", np.cumsum(running[order])[last].tobytes()),
        array("l", np.cumsum(queued[order])[last].tobytes()),
    )

"""Trace-driven simulator of a node-exclusive cluster (see :mod:`slurm_ext.sim.engine`).

Public API:

- :class:`Simulator`, :func:`simulate` — build and run; :class:`SimResult` — the outcome.
- :class:`Workload`, :class:`SimJob`, :class:`EvolvingSpec`, :class:`MalleableRule` — input.
- Base schedulers by name: ``fcfs``, ``easy``, ``backfill`` / ``backfill:D``, ``conservative``, ``none``.
- :class:`SimCluster` — the simulator as a :class:`~slurm_ext.backend.ClusterBackend`, like live Slurm.
- Policies plug in as ``Simulator(..., policy=...)``; see :mod:`slurm_ext.sim.registry` for names.
- External controllers (EJB): :class:`SimController`, :func:`baseline_at`, :class:`EasyView`,
  :func:`easy_view` (from any Snapshot) and ``Simulator.easy_view()``.
"""

from slurm_ext.sim.cluster import SimCluster
from slurm_ext.sim.controller import SimController, baseline_at
from slurm_ext.sim.engine import DecisionError, Simulator, rigid_job, simulate
from slurm_ext.sim.result import SimResult
from slurm_ext.sim.schedulers import EasyView, base_scheduler
from slurm_ext.sim.snapshot import easy_view
from slurm_ext.workloads.model import EvolvingSpec, MalleableRule, SimJob, SkippedJob, Workload

__all__ = [
    "SimCluster",
    "SimController",
    "DecisionError",
    "EasyView",
    "EvolvingSpec",
    "MalleableRule",
    "SimJob",
    "SimResult",
    "Simulator",
    "SkippedJob",
    "Workload",
    "base_scheduler",
    "baseline_at",
    "easy_view",
    "rigid_job",
    "simulate",
]

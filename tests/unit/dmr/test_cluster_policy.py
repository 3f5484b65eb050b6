"""Policies on the whole cluster: specs declared at submission, decisions that wait for their job."""

from __future__ import annotations

import time
from dataclasses import replace

from slurm_ext.decisions import Shrink
from slurm_ext.model import MalleableSpec
from slurm_ext.policies import make_policy
from slurm_ext.service import Controller, ServiceOptions

from .memory_backend import MemoryBackend
from .test_service import check


def test_comment_declares_a_range():
    spec = MalleableSpec.from_comment("project x dmr:min=2,max=16,factor=2,preferred=8")
    assert spec == MalleableSpec(2, 16, 2, 8)
    assert MalleableSpec.from_comment(spec.to_comment()) == spec
    for bad in ("", "dmr:", "dmr:min=0,max=4", "dmr:min=4,max=2", "dmr:min=a,max=4", "dmrx:min=1,max=2"):
        assert MalleableSpec.from_comment(bad) is None, bad


def setup(policy: str = "minagree") -> tuple[MemoryBackend, Controller]:
    backend = MemoryBackend(4)
    job = backend.add(1, 4)
    backend.jobs[1] = replace(job, malleable=MalleableSpec(1, 4))  # declared with --comment
    backend.add(2, 2, pending=True)
    return backend, Controller(backend, make_policy(policy), ServiceOptions(snapshot_interval=0.05))


def test_a_resize_decided_while_the_job_is_not_asking_waits_for_its_check():
    backend, ctl = setup()
    ctl.plan_cluster()
    decision, size, _ = ctl.waiting[1]
    assert isinstance(decision, Shrink) and decision.for_job == 2 and size == 4
    assert ("raise_priority", 2) in backend.calls  # the job the policy would start now
    time.sleep(0.1)
    answer = ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"]))
    assert answer.action == "shrink" and answer.new_size == 2, answer


def test_kept_decisions_expire_and_follow_the_job():
    backend, ctl = setup()
    ctl.plan_cluster()
    view = ctl._view(ctl.cache.fresh(), None)
    job = view.job(1)
    assert ctl._waiting_for(replace(job, node_count=2), view) is None  # made at another size: dropped
    ctl.plan_cluster()
    ctl.waiting[1] = (*ctl.waiting[1][:2], time.monotonic() - 1)
    assert ctl._waiting_for(job, view) is None  # expired
    ctl.plan_cluster()
    started = replace(
        view, jobs=tuple(replace(j, state=job.state) if j.job_id == 2 else j for j in view.jobs)
    )
    assert ctl._waiting_for(job, started) is None  # its beneficiary started meanwhile
    ctl.plan_cluster()
    assert ctl._waiting_for(job, view) is not None


def test_the_asking_jobs_own_declaration_wins():
    _, ctl = setup("dmr")
    ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"], lo=4, hi=4))
    assert ctl.declared[1] == MalleableSpec(4, 4)
    assert ctl._view(ctl.cache.fresh(), None).job(1).malleable == MalleableSpec(4, 4)

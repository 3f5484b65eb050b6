"""Policies on the whole cluster: specs declared at submission, decisions that wait for their job."""

from __future__ import annotations

import time
from dataclasses import replace

from slurm_ext import protocol as p
from slurm_ext.backend import JobRequest
from slurm_ext.decisions import Shrink
from slurm_ext.model import MalleableSpec
from slurm_ext.policies import make_policy
from slurm_ext.service import Controller, ServiceOptions
from slurm_ext.sim import SimCluster

from .test_service import check


def test_comment_declares_a_range():
    spec = MalleableSpec.from_comment("project x dmr:min=2,max=16,factor=2,preferred=8")
    assert spec == MalleableSpec(2, 16, 2, 8)
    assert MalleableSpec.from_comment(spec.to_comment()) == spec
    for bad in ("", "dmr:", "dmr:min=0,max=4", "dmr:min=4,max=2", "dmr:min=a,max=4", "dmrx:min=1,max=2"):
        assert MalleableSpec.from_comment(bad) is None, bad


def setup(policy: str = "minagree") -> tuple[SimCluster, Controller]:
    cluster = SimCluster.empty(4)
    cluster.submit(JobRequest(4, extra_args=("--comment", "dmr:min=1,max=4")))  # job 1, declared
    cluster.submit(JobRequest(2))  # job 2, pending
    return cluster, Controller(cluster, make_policy(policy), ServiceOptions(snapshot_interval=0.05))


def test_a_resize_decided_while_the_job_is_not_asking_waits_for_its_check():
    cluster, ctl = setup()
    assert cluster.job(2).priority < 0  # queued in arrival order (the simulator's encoding)
    ctl.plan_cluster()
    decision, size, _ = ctl.waiting[1]
    assert isinstance(decision, Shrink) and decision.for_job == 2 and size == 4
    assert cluster.job(2).priority > 0  # raised: the job the policy would start now
    time.sleep(0.1)
    answer = ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"]))
    assert answer.action == "shrink" and answer.new_size == 2, answer


def test_a_start_decided_with_the_asking_jobs_shrink_becomes_top_priority():
    # minAgree answers job 1's check with a shrink and a StartJob for job 2: on Slurm, a boost
    cluster, ctl = setup()
    answer = ctl.check(check(1, 4, ["n1", "n2", "n3", "n4"]))
    assert answer.action == "shrink" and answer.new_size == 2, answer
    ctl.background.shutdown(wait=True)
    assert cluster.job(2).priority > 0


def test_kept_decisions_expire_and_follow_the_job():
    _, ctl = setup()
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


def test_a_job_that_stopped_scaling_is_not_grown_again():
    from .test_service import make_sim

    cluster, ctl = make_sim(nodes=8, min_efficiency=0.6)
    cluster.submit(JobRequest(1))
    rigid = cluster.submit(JobRequest(6))  # a rigid job: one node is free
    first = ctl.check(check(1, 1, ["n1"], hi=8, step_seconds=10.0))
    assert first.action == "expand" and first.new_size == 2, first
    assert ctl.commit(p.Commit(job_id=1, token=first.token, ok=True)).ok
    cluster.cancel(rigid)  # the rigid job ends: room to grow to 8
    time.sleep(0.15)  # older than the service's snapshot cache
    nodes = list(cluster.job(1).nodes)
    # on 2 nodes its step takes 9.5 s instead of 10: efficiency (10 / 9.5) / 2 = 0.53
    refused = ctl.check(check(1, 2, nodes, hi=8, step_seconds=9.5))
    assert refused.action == "none" and "parallel efficiency of 0.53" in refused.reason, refused
    ctl.options = replace(ctl.options, min_efficiency=0.0)  # the feedback off: it grows
    assert ctl.check(check(1, 2, nodes, hi=8, step_seconds=9.5)).action == "expand"


def test_an_evolving_request_is_granted_by_dbes_from_idle_nodes_and_refused_by_a_full_cluster():
    cluster = SimCluster.empty(4)
    cluster.submit(JobRequest(2))  # not malleable: its ranks declare nothing but the ask
    ctl = Controller(cluster, make_policy("dbes"), ServiceOptions(snapshot_interval=0.05))
    nodes = list(cluster.job(1).nodes)
    answer = ctl.check(check(1, 2, nodes, lo=2, hi=2, evolving=4))
    assert answer.action == "expand" and answer.new_size == 4, answer
    assert "evolving request granted" in answer.reason
    cluster2 = SimCluster.empty(4)
    cluster2.submit(JobRequest(2))
    cluster2.submit(JobRequest(2))  # rigid, not malleable: nothing can give nodes
    ctl2 = Controller(cluster2, make_policy("dbes"), ServiceOptions(snapshot_interval=0.05))
    nodes = list(cluster2.job(1).nodes)
    answer = ctl2.check(check(1, 2, nodes, lo=2, hi=2, evolving=4))
    assert answer.action == "none", answer
    assert ctl2.check(check(1, 2, nodes, lo=2, hi=2)).action == "none"  # no ask: nothing to grant

"""`serve --policy dbes` and `--policy sd` on the local cluster: live resizes, each the decision
the same policy class makes (as the simulator runs it) on the recorded snapshot it was made on."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from slurm_ext.config import load_config
from slurm_ext.decisions import Decision, Expand, Shrink
from slurm_ext.model import Job, JobState, MalleableSpec, Node, NodeState, Snapshot
from slurm_ext.policies import make_policy
from slurm_ext.policies.base import Policy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.slurm.adapter import SlurmCluster

from .conftest import stop_service

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]


class Recorder(Policy):
    """The live policy, its every call kept: (snapshot as JSON, asking, decisions)."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.schedules_jobs = inner.schedules_jobs  # type: ignore[misc]
        self.calls: list[tuple[str, list[int] | None, list[Decision]]] = []

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        decisions = self.inner.decide(snap, asking)
        self.calls.append((json.dumps(asdict(snap)), None if asking is None else list(asking), decisions))
        return decisions


def load_snapshot(text: str) -> Snapshot:
    raw: dict[str, Any] = json.loads(text)
    nodes = tuple(Node(n["name"], NodeState(n["state"]), n["cpus"]) for n in raw["nodes"])
    jobs = []
    for j in raw["jobs"]:
        spec = j.pop("malleable")
        j["state"] = JobState(j["state"])
        j["nodes"] = tuple(j["nodes"])
        jobs.append(Job(**j, malleable=None if spec is None else MalleableSpec(**spec)))
    return Snapshot(raw["time"], nodes, tuple(jobs))


def serve(policy: str) -> tuple[Server, Recorder]:
    backend = SlurmCluster(slurm_conf=load_config().cluster.slurm_conf)
    recorder = Recorder(make_policy(policy))
    options = ServiceOptions(expand_timeout=5, snapshot_interval=0.5, plan_interval=0)
    server = Server(Controller(backend, recorder, options), host="127.0.0.1", port=0)
    server.start()
    return server, recorder


def replayed(recorder: Recorder, policy: str, job: int, kind: type) -> tuple[Decision, list[Decision]]:
    """The first recorded live decision of ``kind`` for ``job``, and what a fresh policy of the same
    class decides on that call's snapshot (read back from its JSON record)."""
    for snap, asking, decisions in recorder.calls:
        mine = [d for d in decisions if isinstance(d, kind) and d.job_id == job]
        if mine:
            return mine[0], make_policy(policy).decide(load_snapshot(snap), asking)
    raise AssertionError(f"no {kind.__name__} of job {job} in {len(recorder.calls)} live calls")


def same(a: Decision, b: Decision) -> bool:
    return type(a) is type(b) and a.job_id == b.job_id and a.new_size == b.new_size  # type: ignore[attr-defined]


def test_dbes_grows_an_idle_cluster_job_live_as_it_does_offline(slurm, tmp_path: Path):
    server, recorder = serve("dbes")
    try:
        # malleable FS started at its minimum (1 node): DBES's second expansion step gives it the idle nodes
        fs = slurm.dmr_fs(server.address, 1, "--steps 6 --step-seconds 2 --state-mb 8 --min 1 --max 4", ppn=1)
        slurm.wait_gone(fs, timeout=180)
        res = slurm.fs_result("fs", fs)
    finally:
        stop_service(server)
    assert res["checksum_ok"] and any(r[1] == "expand" for r in res["resizes"]), res
    live, offline = replayed(recorder, "dbes", fs, Expand)
    assert any(same(live, d) for d in offline), (live, offline)


def test_sd_policy_lends_a_mates_nodes_to_a_waiting_malleable_job_live_as_it_does_offline(slurm, tmp_path):
    server, recorder = serve("sd")
    try:
        fs = slurm.dmr_fs(
            server.address, 8, "--steps 30 --step-seconds 16 --state-mb 8 --min 1 --max 8", ppn=1
        )
        slurm.wait(lambda: (slurm.job(fs) or {}).get("state") == "RUNNING", timeout=60)
        # a malleable job (declared at submission) that cannot start: SD shrinks FS, its mate
        other = slurm.sbatch(
            4, "sleep 5", "newjob", args=("-t", "2", "--comment", "dmr:min=2,max=4,factor=2")
        )
        slurm.wait(lambda: (slurm.job(other) or {}).get("state") == "RUNNING", timeout=90)
        slurm.wait_gone(fs, timeout=240)
        res = slurm.fs_result("fs", fs)
    finally:
        stop_service(server)
    assert res["checksum_ok"] and any(r[1] == "shrink" for r in res["resizes"]), res
    live, offline = replayed(recorder, "sd", fs, Shrink)
    assert any(same(live, d) for d in offline), (live, offline)

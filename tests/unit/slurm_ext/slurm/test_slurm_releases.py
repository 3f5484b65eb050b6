"""The parser on output recorded from each supported Slurm release (tests/fixtures/slurm/<release>/,
recorded from the dockerized cluster by tests/fixtures/record_slurm_output.py --docker)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from slurm_ext.model import JobState, NodeState, Snapshot
from slurm_ext.slurm.parse import parse_jobs, parse_nodes, parse_test_only
from slurm_ext.slurm.release import SlurmRelease, parse_version

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"
RELEASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def _json(release: str, name: str) -> dict:
    return json.loads((FIXTURES / release / name).read_text())


def _snapshot(release: str, squeue: str = "squeue.json") -> Snapshot:
    jobs = parse_jobs(_json(release, squeue))
    return Snapshot(time=0.0, nodes=tuple(parse_nodes(_json(release, "sinfo.json"))), jobs=tuple(jobs))


@pytest.fixture(params=RELEASES)
def release(request: pytest.FixtureRequest) -> str:
    return request.param


def test_every_supported_release_has_fixtures() -> None:
    assert RELEASES == ["22.05", "24.11", "26.05"]


def test_the_recorded_release_is_the_directory(release: str) -> None:
    version = parse_version((FIXTURES / release / "sinfo_version.txt").read_text())
    assert version.name == release


def test_live_jobs(release: str) -> None:
    for squeue in ("squeue.json", "squeue_all.json"):
        snap = _snapshot(release, squeue)
        assert [j.name for j in snap.jobs] == ["grow", "blocker", "waiting"], squeue
        assert {j.state for j in snap.jobs} == {JobState.RUNNING, JobState.PENDING}


def test_finished_jobs_are_in_the_raw_output_but_not_in_the_snapshot(release: str) -> None:
    raw = _json(release, "squeue_all.json")["jobs"]
    states = {str(j["job_state"] if isinstance(j["job_state"], str) else j["job_state"][0]) for j in raw}
    assert "COMPLETED" in states  # the merged resizer
    assert any(j["name"].startswith("resizer-for-") for j in raw)


def test_running_job(release: str) -> None:
    grow = next(j for j in _snapshot(release).jobs if j.name == "grow")
    assert grow.is_running and grow.node_count == 2 and len(grow.nodes) == 2
    assert grow.time_limit is None  # submitted without a limit in a MaxTime=INFINITE partition
    assert grow.user == "root" and grow.partition == "debug"
    assert grow.start_time is not None and grow.start_time >= grow.submit_time > 1.7e9
    assert grow.priority > 0


def test_pending_job(release: str) -> None:
    (waiting,) = _snapshot(release).pending
    assert waiting.name == "waiting" and waiting.node_count == 3 and waiting.nodes == ()
    assert waiting.time_limit == 600.0
    assert waiting.reason in ("Resources", "Priority")


def test_nodes(release: str) -> None:
    snap = _snapshot(release)
    assert [n.name for n in snap.nodes] == ["n1", "n2", "n3", "n4"]
    assert {n.state for n in snap.nodes} == {NodeState.ALLOCATED} and snap.free == 0
    assert {n.cpus for n in snap.nodes} == {2}
    assert {n.partitions for n in snap.nodes} == {("debug",)}


def test_test_only(release: str) -> None:
    start, nodes = parse_test_only((FIXTURES / release / "sbatch_test_only.txt").read_text())
    assert start > datetime(2026, 1, 1) and len(nodes) == 2


@pytest.mark.parametrize(
    "text",
    [
        "sbatch: Job 5 to start at 2026-11-22T02:50:34 using 2 processors on nodes n[3-4] in partition debug",
        "sbatch: Job 5 to start at 2026-11-22T02:50:34 a using 2 processors on nodes n[3-4] in "
        "partition debug",
        "sbatch: Job 5 to start at 2026-11-22T02:50:34 on cluster c1 using 2 processors on nodes n[3-4] in "
        "partition debug",
        "sbatch: Job 5 to start at 2026-11-22T02:50:34 a on cluster c1 using 2 processors on nodes n[3-4] in "
        "partition debug",
    ],
)
def test_test_only_wordings(text: str) -> None:
    assert parse_test_only(text) == (datetime(2026, 11, 22, 2, 50, 34), ("n3", "n4"))


@pytest.mark.parametrize(
    ("limit", "seconds"),
    [
        (10, 600.0),
        (525600, None),  # 22.05's unlimited
        ({"set": True, "infinite": False, "number": 10}, 600.0),
        ({"set": True, "infinite": True, "number": 0}, None),
        ({"set": True, "infinite": False, "number": 525600}, None),
        ({"set": False, "infinite": False, "number": 0}, None),
        (4294967295, None),  # NO_VAL
        (None, None),
    ],
)
def test_time_limit_forms(limit: object, seconds: float | None) -> None:
    raw = {
        "job_id": 1,
        "job_state": ["PENDING"],
        "time_limit": limit,
        "node_count": {"set": True, "number": 2},
    }
    (job,) = parse_jobs({"jobs": [raw]})
    assert job.time_limit == seconds and job.node_count == 2


def test_grouped_sinfo_flags() -> None:
    doc = {
        "sinfo": [
            {"nodes": {"nodes": ["n2", "n10"]}, "node": {"state": ["IDLE", "DRAIN"]}, "cpus": {"maximum": 4}},
            {"nodes": {"nodes": ["n1"]}, "node": {"state": ["IDLE"]}, "cpus": {"maximum": 4}},
            {
                "nodes": {"nodes": ["n1"]},
                "node": {"state": ["IDLE"]},
                "cpus": {"maximum": 4},
            },  # 2nd partition
        ]
    }
    nodes = parse_nodes(doc)
    assert [(n.name, n.state, n.cpus) for n in nodes] == [
        ("n1", NodeState.IDLE, 4),
        ("n2", NodeState.DRAIN, 4),
        ("n10", NodeState.DRAIN, 4),
    ]


def test_an_idle_node_planned_for_a_pending_job_is_not_free_but_marked_planned() -> None:
    # 23.02+: backfill flags the idle nodes it plans a pending job on; the EJB probe needs them
    doc = {"sinfo": [
        {"nodes": {"nodes": ["n1"]}, "node": {"state": ["IDLE", "PLANNED"]}},
        {"nodes": {"nodes": ["n2"]}, "node": {"state": ["IDLE", "COMPLETING", "PLANNED"]}},
        {"nodes": {"nodes": ["n3"]}, "node": {"state": ["IDLE"]}},
        {"nodes": {"nodes": ["n4"]}, "node": {"state": ["ALLOCATED", "PLANNED"]}},
    ]}  # fmt: skip
    listed = {"nodes": [{"name": "n1", "state": ["IDLE", "PLANNED"]}]}
    nodes = parse_nodes(doc) + parse_nodes(listed)
    assert [(n.name, n.state, n.planned) for n in nodes] == [
        ("n1", NodeState.OTHER, True),
        ("n2", NodeState.OTHER, False),  # still completing: not idle for anyone
        ("n3", NodeState.IDLE, False),
        ("n4", NodeState.ALLOCATED, False),
        ("n1", NodeState.OTHER, True),
    ]


def test_a_node_in_two_partitions_is_one_node_in_both() -> None:
    # 24.11+: one group per partition (and state); 22.05: each node lists its partitions
    grouped = {"sinfo": [
        {"nodes": {"nodes": ["n1", "n2"]}, "node": {"state": ["IDLE"]}, "partition": {"name": "all"}},
        {"nodes": {"nodes": ["n2"]}, "node": {"state": ["IDLE"]}, "partition": {"name": "upper"}},
    ]}  # fmt: skip
    listed = {"nodes": [{"name": "n1", "state": "idle", "partitions": ["all"]},
                        {"name": "n2", "state": "idle", "partitions": ["all", "upper"]}]}  # fmt: skip
    for doc in (grouped, listed):
        assert [(n.name, n.partitions) for n in parse_nodes(doc)] == [
            ("n1", ("all",)),
            ("n2", ("all", "upper")),
        ]


def test_release_ordering() -> None:
    assert parse_version("slurm-wlm 22.05.8") < parse_version("slurm 24.11.5") == SlurmRelease(24, 11, 5)

"""Parsing of Slurm output recorded from the real local cluster (tests/fixtures/record_slurm_output.py)."""

import json
from pathlib import Path

import pytest

from slurm_ext.errors import InvalidRequest, JobNotFound, SlurmError, SlurmUnavailable
from slurm_ext.model import JobState, NodeState, Snapshot
from slurm_ext.slurm.commands import classify
from slurm_ext.slurm.parse import (
    compress_nodes,
    expand_nodes,
    parse_jobs,
    parse_nodes,
    parse_salloc_job_id,
    parse_test_only,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    jobs = parse_jobs(json.loads((FIXTURES / "squeue.json").read_text()))
    nodes = parse_nodes(json.loads((FIXTURES / "sinfo.json").read_text()))
    return Snapshot(time=0.0, nodes=tuple(nodes), jobs=tuple(jobs))


def test_only_live_jobs_are_kept(snap: Snapshot) -> None:
    # The recording holds cancelled jobs and COMPLETED merged resizers: none is live.
    assert {j.state for j in snap.jobs} <= {JobState.PENDING, JobState.RUNNING}
    assert not any(j.name.startswith("resizer-for-") for j in snap.jobs)
    assert [j.name for j in snap.jobs] == ["grow", "blocker", "waiting"]


def test_running_job_fields(snap: Snapshot) -> None:
    grow = next(j for j in snap.jobs if j.name == "grow")
    assert grow.is_running and grow.node_count == 2 and grow.nodes == ("n1", "n2")
    assert grow.user == "root" and grow.partition == "debug"
    assert grow.start_time is not None and grow.start_time >= grow.submit_time > 0


def test_pending_job_fields(snap: Snapshot) -> None:
    (waiting,) = snap.pending
    assert waiting.name == "waiting" and waiting.node_count == 3 and waiting.nodes == ()
    assert waiting.time_limit == 600.0  # 10 minutes, as submitted
    assert waiting.reason == "Resources"


def test_nodes(snap: Snapshot) -> None:
    assert snap.total_nodes == 8
    assert all(n.state is NodeState.ALLOCATED for n in snap.nodes)
    assert snap.free == 0


def test_hostlists_use_the_library() -> None:
    assert expand_nodes("n[1,3-4]") == ("n1", "n3", "n4")
    assert expand_nodes("") == ()
    assert compress_nodes(["n1", "n2", "n4"]) == "n[1-2,4]"


def test_test_only_output() -> None:
    start, nodes = parse_test_only((FIXTURES / "sbatch_test_only.txt").read_text())
    assert start.year == 2027 and nodes == ("n1", "n2")
    with pytest.raises(ValueError, match="unexpected"):
        parse_test_only("sbatch: error: something else")


def test_salloc_job_id() -> None:
    assert parse_salloc_job_id("salloc: Granted job allocation 42\n") == 42
    assert parse_salloc_job_id("salloc: Pending job allocation 7\nsalloc: job 7 queued") == 7
    assert parse_salloc_job_id("salloc: error: Job submit/allocate failed") is None


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        (
            "scontrol: error: Could not load state information for job 9: Invalid job id specified",
            JobNotFound,
        ),
        ("Node count specification invalid for job 1", InvalidRequest),
        ("sbatch: unrecognized option '--bogus'", InvalidRequest),
        ("allocation failure: Requested node configuration is not available", InvalidRequest),
        ("salloc: error: Job submit/allocate failed: Job dependency problem", InvalidRequest),
        ("squeue: error: Unable to contact slurm controller (connect failure)", SlurmUnavailable),
        ("something nobody foresaw", SlurmError),
    ],
)
def test_error_classification(stderr: str, kind: type) -> None:
    assert classify(stderr) is kind

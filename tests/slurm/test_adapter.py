"""The Slurm adapter against the real local cluster."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence

import pytest

from slurm_ext.backend import EXPANDER_PREFIX, RESIZER_PREFIX, JobRequest, expander_name
from slurm_ext.errors import InvalidRequest, JobNotFound, ResizeTimeout, SlurmError
from slurm_ext.model import NodeState
from slurm_ext.slurm import SlurmCluster
from slurm_ext.slurm.commands import SlurmCommands

pytestmark = pytest.mark.slurm


def idle(slurm: SlurmCluster) -> set[str]:
    return set(slurm.snapshot().idle_nodes)


def test_submit_and_cancel(slurm: SlurmCluster, jobs) -> None:
    job_id = jobs.submit(1, name="hello")
    jobs.wait_running(job_id)
    job = slurm.job(job_id)
    assert job.name == "hello" and job.node_count == 1 and len(job.nodes) == 1
    assert job.time_limit == 600
    slurm.cancel(job_id)
    jobs.wait(lambda: slurm.snapshot().job(job_id) is None, 15, "cancelled job to leave the queue")


def test_a_helper_job_is_cancelled_only_while_it_bears_its_name(slurm: SlurmCluster, jobs) -> None:
    """After a slurmctld that lost its last state gives an id again, the helper job the service
    knew by that id may be someone else's: the service cancels by id and name together."""
    job_id = jobs.submit(1, name="someone-elses")
    jobs.wait_running(job_id)
    slurm.cancel_quietly(job_id, expander_name(job_id))
    time.sleep(1.0)
    assert slurm.job(job_id).is_running  # not ours by name: left alone
    slurm.cancel_quietly(job_id, "someone-elses")
    jobs.wait(lambda: slurm.snapshot().job(job_id) is None, 15, "the job to leave the queue")


def test_shrink_three_to_two_to_one_frees_nodes(slurm: SlurmCluster, jobs) -> None:
    job_id = jobs.submit(3)
    jobs.wait_running(job_id)
    for size in (2, 1):
        before = set(slurm.job(job_id).nodes)
        slurm.shrink(job_id, size)
        after = set(slurm.job(job_id).nodes)
        assert len(after) == size and after < before
        assert before - after <= idle(slurm), "released nodes must be idle at once"


def test_shrink_keeps_the_named_nodes(slurm: SlurmCluster, jobs) -> None:
    job_id = jobs.submit(3)
    jobs.wait_running(job_id)
    nodes = slurm.job(job_id).nodes
    slurm.shrink(job_id, 2, keep=[nodes[0], nodes[2]])
    assert slurm.job(job_id).nodes == (nodes[0], nodes[2])


def test_repeated_expand_and_shrink_on_one_job(slurm: SlurmCluster, jobs) -> None:
    # Without accounting, the second resize of a job fails ("the DB index is being set").
    job_id = jobs.submit(1)
    jobs.wait_running(job_id)
    for size in (2, 4, 2, 1, 3):
        if size > slurm.job(job_id).node_count:
            slurm.expand(job_id, size, timeout=10)
        else:
            slurm.shrink(job_id, size)
        job = slurm.job(job_id)
        assert job.node_count == size and len(job.nodes) == size and job.is_running
    snap = slurm.snapshot()
    assert not [j for j in snap.jobs if j.name.startswith(RESIZER_PREFIX)], "no resizer may remain"
    busy = {n.name for n in snap.nodes if n.state is not NodeState.IDLE}
    assert busy == set(slurm.job(job_id).nodes), "only the job's nodes are allocated: none lost"


def test_resizer_that_cannot_start_is_cancelled(slurm: SlurmCluster, jobs) -> None:
    job_id = jobs.submit(1)
    jobs.wait_running(job_id)
    filler = jobs.submit(slurm.snapshot().free)
    jobs.wait_running(filler)
    with pytest.raises(ResizeTimeout, match="resizer cancelled"):
        slurm.expand(job_id, 2, timeout=2)
    snap = slurm.snapshot()
    assert not [j for j in snap.jobs if j.name.startswith(RESIZER_PREFIX)]
    assert snap.job(job_id).node_count == 1  # type: ignore[union-attr]


def test_raise_priority_reorders_the_queue(slurm: SlurmCluster, jobs) -> None:
    blocker = jobs.submit(slurm.snapshot().free)
    jobs.wait_running(blocker)
    first, second = jobs.submit(2, name="first"), jobs.submit(2, name="second")
    jobs.wait(lambda: [j.job_id for j in slurm.snapshot().pending] == [first, second], 10, "FIFO queue")
    slurm.raise_priority(second)
    assert [j.job_id for j in slurm.snapshot().pending] == [second, first]
    with pytest.raises(InvalidRequest, match="only a pending job"):
        slurm.raise_priority(blocker)


def test_would_start_now(slurm: SlurmCluster, jobs) -> None:
    total = slurm.snapshot().total_nodes
    assert slurm.would_start_now(total)
    jobs.wait_running(jobs.submit(1))
    assert slurm.would_start_now(total - 1)
    assert not slurm.would_start_now(total)


def test_set_time_limit(slurm: SlurmCluster, jobs) -> None:
    job_id = jobs.submit(1, time_limit=600)
    jobs.wait_running(job_id)
    slurm.set_time_limit(job_id, 1250)  # rounded up to whole minutes
    assert slurm.job(job_id).time_limit == 21 * 60


def test_clear_errors(slurm: SlurmCluster, jobs) -> None:
    for call in (
        lambda: slurm.cancel(999999),
        lambda: slurm.shrink(999999, 1),
        lambda: slurm.expand(999999, 2),
        lambda: slurm.job(-3),
    ):
        with pytest.raises(JobNotFound):
            call()
    running = jobs.submit(2)
    jobs.wait_running(running)
    with pytest.raises(InvalidRequest, match="must be 1..1"):
        slurm.shrink(running, 0)
    with pytest.raises(InvalidRequest, match="cannot expand"):
        slurm.expand(running, 2)
    filler = jobs.submit(slurm.snapshot().free)
    jobs.wait_running(filler)
    pending = jobs.submit(1)
    with pytest.raises(InvalidRequest, match="PENDING, not RUNNING"):
        slurm.expand(pending, 2)
    with pytest.raises(InvalidRequest, match="unrecognized option"):
        slurm.submit(JobRequest(nodes=1, extra_args=("--bogus",)))


def test_orphan_resizer_sweep_spares_young_resizers(slurm: SlurmCluster, jobs) -> None:
    # A resizer left behind by a crashed service: a pending job named like one (its target is gone).
    filler = jobs.submit(slurm.snapshot().free)
    jobs.wait_running(filler)
    orphan = jobs.submit(1, name=f"{RESIZER_PREFIX}999999")
    assert slurm.cancel_orphan_resizers(older_than=3600) == []  # may be a live expansion: kept
    assert slurm.job(orphan).is_pending
    jobs.wait(lambda: slurm.snapshot().time - slurm.job(orphan).submit_time > 1, 5, "the resizer to age")
    assert slurm.cancel_orphan_resizers(older_than=1) == [orphan]
    jobs.wait(lambda: slurm.snapshot().job(orphan) is None, 10, "the orphan to be cancelled")


def test_steps_on_lists_application_steps_by_node(slurm: SlurmCluster, jobs) -> None:
    job_id = jobs.submit(2, command="srun -N 1 -n 1 sleep 600 & srun -N 1 -n 1 sleep 600 & wait")
    jobs.wait_running(job_id)
    nodes = slurm.job(job_id).nodes
    jobs.wait(lambda: len(slurm.steps_on(job_id, nodes)) == 2, 20, "two steps")
    for node in nodes:
        (step,) = slurm.steps_on(job_id, [node])
        assert step.startswith(f"{job_id}.")
    assert slurm.steps_on(job_id, ["n99"]) == []


def test_impossible_test_only_is_a_clear_error(slurm: SlurmCluster) -> None:
    with pytest.raises(InvalidRequest):
        slurm.would_start_now(slurm.snapshot().total_nodes + 5)


class HandOverLost(SlurmCommands):
    """Real Slurm, but the resizer's ``NumNodes=0`` never happens: ``NumNodes=ALL`` then answers
    rc 0 without adding anything (what Slurm does after a failed hand-over)."""

    def run(
        self, args: Sequence[str], timeout: float | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        if list(args[:2]) == ["scontrol", "update"] and args[-1] == "NumNodes=0":
            return subprocess.CompletedProcess(list(args), 0, "", "")
        return super().run(args, timeout, check)


def test_a_merge_that_adds_no_node_is_a_failure(slurm: SlurmCluster, jobs) -> None:
    job_id = jobs.submit(1)
    jobs.wait_running(job_id)
    lossy = SlurmCluster()
    lossy.cmd = HandOverLost()
    lossy.cmd.env = slurm.cmd.env
    with pytest.raises(SlurmError, match="left it on 1 node"):
        lossy.expand(job_id, 2, timeout=10)
    snap = slurm.snapshot()
    assert snap.job(job_id).node_count == 1  # type: ignore[union-attr]
    assert not [j for j in snap.jobs if j.name.startswith(RESIZER_PREFIX)], "the resizer is cancelled"
    jobs.wait(lambda: slurm.snapshot().free == snap.total_nodes - 1, 15, "the resizer's node back")


def test_an_expander_job_is_shaped_after_its_application(slurm: SlurmCluster, jobs, tmp_path) -> None:
    app_id = jobs.submit(1, time_limit=600)
    jobs.wait_running(app_id)
    app = slurm.job(app_id)
    exp = slurm.submit_expander(app, 2, "sleep 600", time_limit=299)
    jobs.ids.append(exp)
    shown = slurm.cmd.run(["scontrol", "show", "job", "-o", str(exp)]).stdout
    assert f"JobName={expander_name(app_id)}" in shown and f"Partition={app.partition}" in shown
    assert "NumNodes=2" in shown and "OverSubscribe=NO" in shown  # whole nodes
    assert "TimeLimit=00:04:00" in shown  # never beyond what the application has left (rounded down)
    assert f"UserId={app.user}(" in shown


def test_expander_jobs_of_a_gone_application_are_swept(slurm: SlurmCluster, jobs) -> None:
    live, gone = jobs.submit(1), jobs.submit(1)
    jobs.wait_running(live)
    jobs.wait_running(gone)
    keep = slurm.submit_expander(slurm.job(live), 1, "sleep 600", time_limit=300)
    orphan = slurm.submit_expander(slurm.job(gone), 1, "sleep 600", time_limit=300)
    jobs.ids += [keep, orphan]
    slurm.cancel(gone)
    jobs.wait(lambda: slurm.snapshot().job(gone) is None, 15, "the application to end")
    assert slurm.cancel_orphan_expanders() == [orphan]
    jobs.wait(lambda: slurm.snapshot().job(orphan) is None, 15, "the orphan expander to be cancelled")
    assert slurm.job(keep).name == f"{EXPANDER_PREFIX}{live}"  # its application runs: kept

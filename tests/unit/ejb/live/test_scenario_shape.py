"""The live scenario's shape in a partition of a given size (``ejb demo --partition``)."""

from __future__ import annotations

import pytest

from ejb.live.scenario import WIDE, Shape


def test_eight_nodes_or_more_keep_the_wide_scenario() -> None:
    shape = WIDE.fitted(12, "batch", whole=True)
    assert (shape.background_nodes, shape.nodes, shape.pin_background) == (4, 6, True)
    assert shape.placement() == ["--partition=batch", "--exclusive"]


@pytest.mark.parametrize("idle", [3, 4, 5, 6, 7])
def test_a_small_partition_leaves_nodes_free_for_good_beside_j0s_plan(idle: int) -> None:
    shape = WIDE.fitted(idle, "right")
    background, nodes = shape.background_nodes, shape.nodes
    free_for_good = idle - nodes
    assert shape.pin_background and free_for_good >= 1
    assert nodes > idle - background  # the job waits for the background job
    assert background <= nodes  # Slurm plans J0 on the background's nodes and some idle ones
    # every rank fits a subjob on the nodes free for good at o_max 4 on nodes of 2 CPUs
    assert nodes * shape.ppn <= 4 * 2 * free_for_good
    # a job below ejb-submit's default smallest (8 processors) says EJB may take it
    assert ("#EJB --min-procs" in shape.script()) is (nodes * shape.ppn < 8)


@pytest.mark.parametrize("idle", [0, 1, 2])
def test_fewer_than_3_idle_nodes_are_refused(idle: int) -> None:
    with pytest.raises(ValueError, match="3 idle nodes or more"):
        WIDE.fitted(idle, "tiny")


def test_the_job_script_names_the_partition_and_whole_nodes_only_when_asked() -> None:
    plain = Shape().script()
    assert "--partition" not in plain and "--exclusive" not in plain
    placed = Shape(partition="left", whole=True).script()
    assert "#SBATCH --partition=left\n#SBATCH --exclusive\n" in placed
    assert placed.index("--exclusive") < placed.index(" -m dmr ")

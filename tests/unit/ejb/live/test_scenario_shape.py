"""The live scenario's shape in a partition of a given size (``ejb demo --partition``)."""

from __future__ import annotations

import pytest

from ejb.live.scenario import WIDE, Shape


def test_eight_nodes_or_more_keep_the_wide_scenario() -> None:
    shape = WIDE.fitted(12, "batch", whole=True)
    assert (shape.background_nodes, shape.nodes, shape.pin_background) == (4, 6, True)
    assert shape.placement() == ["--partition=batch", "--exclusive"]


@pytest.mark.parametrize(("size", "background", "subjob"), [(2, 1, 1), (3, 1, 2), (5, 2, 3), (7, 3, 4)])
def test_a_small_partition_leaves_a_subjob_half_of_it_until_j0_starts(
    size: int, background: int, subjob: int
) -> None:
    shape = WIDE.fitted(size, "right")
    assert shape.nodes == size and shape.background_nodes == background and shape.pin_background
    assert shape.nodes - shape.background_nodes == subjob
    # every rank fits a subjob there at o_max 4 on nodes of one CPU
    assert shape.nodes * shape.ppn <= 4 * subjob
    # a job below ejb-submit's default smallest (8 processors) says EJB may take it
    assert ("#EJB --min-procs 4\n" in shape.script()) is (size == 2)


def test_a_partition_of_one_node_is_refused() -> None:
    with pytest.raises(ValueError, match="2 nodes or more"):
        WIDE.fitted(1, "tiny")


def test_the_job_script_names_the_partition_and_whole_nodes_only_when_asked() -> None:
    plain = Shape().script()
    assert "--partition" not in plain and "--exclusive" not in plain
    placed = Shape(partition="left", whole=True).script()
    assert "#SBATCH --partition=left\n#SBATCH --exclusive\n" in placed
    assert placed.index("--exclusive") < placed.index(" -m dmr ")

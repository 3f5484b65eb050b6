"""Job arrays through the Slurm adapter: ``JobRequest.array`` is sbatch's ``--array``; ``array_states``
reads each task's state from one ``squeue -r`` call (the text of Slurm 22.05, read on the local cluster)."""

from __future__ import annotations

import pytest

from slurm_ext.backend import JobRequest
from slurm_ext.errors import SlurmUnavailable
from slurm_ext.slurm.parse import parse_array_states
from tests.unit.slurm_ext.slurm.fakes import cluster

STATES = "squeue -h -r --states=all -j 7 -o %K|%T"


def test_an_array_request_is_sbatchs_array_option() -> None:
    line = "sbatch --parsable -N 1 -J sweep -t 2 --array=0-9%2 -o /s/task-%a.out --wrap true"
    slurm, fake = cluster({line: (0, "7\n", "")})
    request = JobRequest(nodes=1, time_limit=90, name="sweep", command="true", array="0-9%2",
                         extra_args=("-o", "/s/task-%a.out"))  # fmt: skip
    assert slurm.submit(request) == 7 and fake.ran == [line.split(" ")]


def test_a_plain_request_has_no_array_option() -> None:
    slurm, fake = cluster({"sbatch --parsable -N 1 -J job --wrap true": (0, "8;local\n", "")})
    assert slurm.submit(JobRequest(nodes=1, command="true")) == 8


def test_each_tasks_state_pending_ones_included() -> None:
    out = "3|PENDING\n10|PENDING\n2|RUNNING\n0|COMPLETED\n5|FAILED\n9-11%3|PENDING\n"
    slurm, _ = cluster({STATES: (0, out, "")})
    assert slurm.array_states(7) == {3: "PENDING", 10: "PENDING", 2: "RUNNING", 0: "COMPLETED", 5: "FAILED"}
    assert parse_array_states("N/A|RUNNING\n\n") == {}  # not an array


def test_an_array_slurm_forgot_has_no_tasks_but_no_slurm_raises() -> None:
    slurm, _ = cluster({STATES: (1, "", "slurm_load_jobs error: Invalid job id specified")})
    assert slurm.array_states(7) == {}
    slurm, _ = cluster({STATES: (1, "", "slurm_load_jobs error: Unable to contact slurm controller")})
    with pytest.raises(SlurmUnavailable):
        slurm.array_states(7)

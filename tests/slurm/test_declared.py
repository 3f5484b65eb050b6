"""A job declares its malleable range at submission; the adapter reads it from Slurm's comment field."""

from __future__ import annotations

import pytest

from slurm_ext.backend import JobRequest
from slurm_ext.model import MalleableSpec

pytestmark = pytest.mark.slurm


def test_the_comment_declares_the_range_of_a_pending_job(slurm, jobs, local_cluster):
    filler = jobs.submit(local_cluster.cfg.nodes, name="filler")
    jobs.wait_running(filler)
    spec = MalleableSpec(2, 8, 2, 4)
    extra = ("-o", "/dev/null", f"--comment=site text {spec.to_comment()}")
    job_id = slurm.submit(
        JobRequest(nodes=4, name="declared", time_limit=600, command="sleep 60", extra_args=extra)
    )
    jobs.ids.append(job_id)
    job = slurm.job(job_id)
    assert not job.is_running and job.malleable == spec
    assert slurm.job(filler).malleable is None

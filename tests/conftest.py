"""Shared fixtures. Tests marked ``slurm`` run against the real local cluster (slurm-ext cluster up)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from slurm_ext.config import load_config
from slurm_ext.local.cluster import LocalCluster
from slurm_ext.local.prereqs import PrerequisiteError, check_programs, check_root


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    """The local Slurm cluster, brought up once per session (and down again only if we started it).

    Without root or the Slurm packages the Slurm tests are skipped locally, but fail under CI.
    """
    try:
        check_root()
        check_programs()
    except PrerequisiteError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the Slurm tests need the local cluster: {exc}")
        pytest.skip(f"local Slurm cluster unavailable: {exc}")
    cluster = LocalCluster(load_config().cluster)
    started = not cluster.is_up()
    cluster.up()
    yield cluster
    if started:
        cluster.down()

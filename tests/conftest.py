"""Shared fixtures. Tests marked ``slurm`` run against the real local cluster (slurm-ext cluster up)."""

from __future__ import annotations

import os
import pwd
import subprocess
from collections.abc import Iterator

import pytest

from slurm_ext import compiled
from slurm_ext.config import load_config
from slurm_ext.local.cluster import LocalCluster
from slurm_ext.local.prereqs import PrerequisiteError, check_programs, check_root

# This process runs the policies' sources (unit tests patch, subclass and profile them); the commands
# the tests start run what the install built (compiled where it could be), as a user's commands do.
compiled.stop()


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


OTHER_USER = "elastic-test"


@pytest.fixture(scope="session")
def other_user() -> str:
    """A second, unprivileged Unix user (created if missing; needs root)."""
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root")
    try:
        pwd.getpwnam(OTHER_USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", OTHER_USER], check=True)
    return OTHER_USER

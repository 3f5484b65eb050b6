"""The local cluster's secrets and sharing: a private DB password, a limited DB account, munged shared."""

from __future__ import annotations

import stat

import pytest
from typer.testing import CliRunner

from slurm_ext.cli import app
from slurm_ext.local.cluster import MUNGE_USERS

pytestmark = pytest.mark.slurm


def test_db_password_is_private_and_per_cluster(local_cluster):
    etc = local_cluster.cfg.slurm_conf.parent
    secret = etc / "db-password"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE((etc / "slurmdbd.conf").stat().st_mode) == 0o600
    password = secret.read_text().strip()
    assert len(password) >= 24 and password != "slurm-local"
    assert f"StoragePass={password}" in (etc / "slurmdbd.conf").read_text()


def test_db_account_has_only_what_slurmdbd_needs(local_cluster):
    c = local_cluster.cfg
    grants = local_cluster._mysql(f"SHOW GRANTS FOR '{c.db_user}'@'localhost'").stdout
    assert "ALL PRIVILEGES" not in grants and "GRANT OPTION" not in grants
    assert f"ON `{c.db_name}`.*" in grants


def test_munged_is_shared_not_owned(local_cluster):
    assert str(local_cluster.dir) in MUNGE_USERS.read_text().split()


def test_absurd_node_counts_are_refused_before_anything_starts(local_cluster):
    result = CliRunner().invoke(app, ["cluster", "up", "--nodes", "10000"])
    assert result.exit_code == 2
    assert "--nodes must be between 1 and 128" in result.output
    assert local_cluster.is_up()  # the running cluster was not touched

"""A wheel built from the repository, installed into a fresh venv outside the checkout, simulates
and brings a local cluster up and down (a second, 2-node one on other ports, beside the session's).

The venv gets the wheel's dependencies from PyPI (pip's cache makes that quick after
``scripts/install.sh``); nothing of the checkout is on its path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_ext.local.cluster import LocalCluster

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp), str(ROOT)]
    build = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp)
    assert build.returncode == 0, build.stderr
    [wheel] = tmp.glob("elastic_slurm-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True, timeout=120)
    pip = [str(tmp / "venv" / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)]
    install = subprocess.run(pip, capture_output=True, text=True, timeout=900, cwd=tmp)
    assert install.returncode == 0, install.stderr[-3000:]
    return tmp / "venv" / "bin"


def run(venv: Path, cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A command of the venv, from ``cwd``, with an environment that knows nothing of the checkout."""
    clean = {"PATH": f"{venv}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8", **env}
    return subprocess.run([str(venv / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env=clean)  # fmt: skip


def test_the_installed_wheel_simulates_kth_small_with_dmr(venv: Path, tmp_path: Path) -> None:
    where = run(venv, tmp_path, "python", "-c", "import slurm_ext, dmr, ejb; print(slurm_ext.__file__)")
    assert where.returncode == 0 and where.stdout.startswith(str(venv.parent)), where
    res = run(venv, tmp_path, "slurm-ext", "simulate", "-w", "kth-small", "-p", "dmr", "--json")
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["policy"] == "dmr" and out["jobs_simulated"] > 0 and out["jobs_unfinished"] == 0


@pytest.fixture
def second(local_cluster: LocalCluster, tmp_path: Path) -> Iterator[Path]:
    """A config file for a 2-node cluster on ports 200 above the session's; it is brought down after."""
    cfg = local_cluster.cfg
    path = tmp_path / "elastic.yaml"
    path.write_text(
        f"cluster:\n  name: wheel\n  nodes: 2\npaths:\n  state_dir: {tmp_path / 'state'}\n"
        f"ports:\n  slurmctld: {cfg.slurmctld_port + 200}\n  slurmdbd: {cfg.slurmdbd_port + 200}\n"
        f"  mariadb: {cfg.mariadb_port + 200}\n  slurmd_base: {cfg.slurmd_base_port + 200}\n"
    )
    yield path
    from slurm_ext.config import load_config

    LocalCluster(load_config(path).cluster).down()


def test_the_installed_wheel_brings_a_cluster_up_and_down(
    venv: Path, second: Path, local_cluster: LocalCluster
) -> None:
    where = second.parent
    up = run(venv, where, "slurm-ext", "cluster", "up", ELASTIC_SLURM_CONF=str(second))
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
    sinfo = subprocess.run(["sinfo", "-h", "-o", "%D %T"], capture_output=True, text=True, timeout=30,
                           env={"SLURM_CONF": str(where / "state" / "etc" / "slurm.conf")})  # fmt: skip
    assert sinfo.stdout.split() == ["2", "idle"], sinfo
    down = run(venv, where, "slurm-ext", "cluster", "down", ELASTIC_SLURM_CONF=str(second))
    assert down.returncode == 0, down.stderr[-2000:]
    assert local_cluster.is_up(), "the session's cluster must be untouched"


def test_the_installed_wheel_ships_libdmr_and_a_c_program_runs_on_it(venv: Path, tmp_path: Path) -> None:
    """`mpicc app.c $(dmr-config --cflags --libs)` with the venv's tools, run with its mpiexec."""
    flags = run(venv, tmp_path, "dmr-config", "--cflags", "--libs")
    assert flags.returncode == 0 and str(venv.parent) in flags.stdout, flags.stderr
    source = ROOT / "tests" / "mpi" / "prog_c_api.c"
    build = run(venv, tmp_path, "mpicc", str(source), "-o", "prog", *flags.stdout.split())
    assert build.returncode == 0, build.stderr
    res = run(venv, tmp_path, "mpiexec", "-n", "2", str(tmp_path / "prog"), DMR_SERVICE="127.0.0.1:1")
    assert res.returncode == 0 and res.stdout.count("C_API_OK") == 2, res.stdout + res.stderr

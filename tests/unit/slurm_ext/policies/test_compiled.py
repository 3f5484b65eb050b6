"""The compiled build (``ELASTIC_MYPYC=1``, see setup.py) decides exactly as the pure one.

Builds the wheel with every policy module and the snapshot builder compiled by mypyc, from a
copy of the tree (a compiled build must leave nothing in the checkout), and runs the
simulator's regression cases on it:
kth-small and ESP under every policy, and the whole KTH-SP2 trace where ``../shared/traces``
has it. Needs a C compiler and mypy (the test extra).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
POLICY_MODULES = sorted(p.stem for p in (ROOT / "slurm_ext" / "policies").glob("*.py"))


def _tree_copy(dest: Path) -> Path:
    """What a wheel is built from: pyproject, setup.py, README and the packages."""
    dest.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")
    for pkg in ("dmr", "apps", "ejb", "slurm_ext"):
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=skip)
    return dest


def test_the_compiled_policies_give_every_regression_case_unchanged(tmp_path: Path):
    pytest.importorskip("mypyc", reason="mypy (the test extra) builds the compiled policies")
    src = _tree_copy(tmp_path / "src")
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    build = subprocess.run(
        [*pip, "-w", str(tmp_path), str(src)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env={**os.environ, "ELASTIC_MYPYC": "1"},
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    [wheel] = tmp_path.glob("elastic_slurm-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    compiled = {p.name.split(".")[0] for p in (site / "slurm_ext" / "policies").glob("*.so")}
    assert compiled == set(POLICY_MODULES)
    assert list((site / "slurm_ext" / "sim").glob("snapshot.*.so")), "the snapshot builder is compiled too"

    env = {**os.environ, "PYTHONPATH": str(site), "ELASTIC_MYPYC": ""}
    probe = "import slurm_ext.policies.dbes as m; print(m.__file__)"
    where = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=site)
    assert where.stdout.strip().endswith(".so"), where.stdout + where.stderr  # the compiled one runs
    check = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sim_regression.py")],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
    assert "DIFFERS" not in check.stdout and check.stdout.count(" same ") >= 24


def test_an_editable_install_runs_its_compiled_policies_only_while_they_match_the_sources(tmp_path: Path):
    # what `pip install -e .` does where mypyc and a C compiler are found: the compiled modules go to
    # build/mypyc-lib/ with the digests of their sources (setup.py); slurm_ext.compiled imports them
    # instead of the sources until one is edited, and a second build of the same sources compiles nothing
    pytest.importorskip("mypyc", reason="mypy (the test extra) builds the compiled policies")
    src = _tree_copy(tmp_path / "src")
    build = [sys.executable, "setup.py", "-q", "build_ext", "--inplace"]
    env = {k: v for k, v in os.environ.items() if k != "ELASTIC_MYPYC"}
    made = subprocess.run(build, capture_output=True, text=True, timeout=900, cwd=src, env=env)
    assert made.returncode == 0, made.stderr[-3000:]
    assert not list((src / "slurm_ext" / "policies").glob("*.so")), "nothing compiled beside the sources"

    def runs() -> str:
        probe = "import slurm_ext.policies.sdpolicy as p, slurm_ext.sim.snapshot as s; "
        probe += "print(p.__file__, s.__file__)"
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                             env={**env, "PYTHONPATH": str(src)})  # fmt: skip
        assert out.returncode == 0, out.stderr
        return out.stdout

    lib = src / "build" / "mypyc-lib"
    assert runs().split() == [str(next((lib / "slurm_ext" / "policies").glob("sdpolicy.*.so"))),
                              str(next((lib / "slurm_ext" / "sim").glob("snapshot.*.so")))]  # fmt: skip
    policy = src / "slurm_ext" / "policies" / "dbes.py"
    text = policy.read_text()
    policy.write_text(text + "# an edit\n")
    pure = str(src / "slurm_ext" / "policies" / "sdpolicy.py")
    assert runs().split()[0] == pure  # every source once one has changed
    policy.write_text(text)
    again = subprocess.run(build, capture_output=True, text=True, timeout=900, cwd=src, env=env)
    assert again.returncode == 0 and "build/mypyc-lib is up to date" in again.stderr, again.stderr[-3000:]
    assert runs().split()[0].endswith(".so")

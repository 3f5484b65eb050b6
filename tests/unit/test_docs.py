"""The documentation: the site builds strictly (no broken link, no page left out of the nav, the
command reference generated), and README.md stays a short overview that starts with the set-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP = [
    "bash scripts/demo.sh     # installs, starts an 8-node Slurm cluster here, runs a malleable MPI app"
    " that grows and shrinks",
    "bash scripts/test.sh     # installs, starts the cluster, runs ruff + the whole test suite,"
    " stops the cluster",
]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    for command in ("slurm-ext serve", "ejb manager", "ejb-submit", "dmr-run", "dmr-config"):
        assert command in cli, command


def test_the_readme_is_short_and_starts_with_the_setup() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the details into docs/"
    first_fence = next(i for i, line in enumerate(lines) if line.startswith("```"))
    assert lines[first_fence] == "```bash"
    assert lines[first_fence + 1 : first_fence + 3] == SETUP
    assert not any(line.startswith("#") for line in lines[1:first_fence]), "the setup comes first"


def test_the_readme_c_example_is_its_first_c_block() -> None:
    """tests/mpi/test_c_api.py compiles the first C block of README.md."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Make an MPI program malleable\n", 1)[1].split("\n## ", 1)[0]
    first_c = readme.split("```c\n", 1)[1].split("```", 1)[0]
    assert first_c in section and "dmr_check_status" in first_c

"""`slurm-ext simulate --swf-reading`: the loader's readings from the simulator's CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from slurm_ext.cli import app


def swf_line(job: int, submit: int, run: int, procs: int, req_time: int) -> str:
    fields = [job, submit, 5, run, procs, -1, -1, procs, req_time, -1, 1, 3, 1, -1, 1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def test_default_and_pyss_readings(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    body = [swf_line(1, 0, 100, 4, 200), swf_line(2, 10, -1, 2, 100)]  # job 2: unknown run time
    trace.write_text("; MaxProcs: 8\n" + "\n".join(body) + "\n")
    runner = CliRunner()
    plain = runner.invoke(app, ["simulate", "-w", str(trace), "--json"])
    pyss = runner.invoke(app, ["simulate", "-w", str(trace), "--json", "--swf-reading", "pyss"])
    assert plain.exit_code == pyss.exit_code == 0, plain.output + pyss.output
    assert json.loads(plain.stdout)["jobs_skipped"] == 1  # the default skips the unknown run time
    assert json.loads(pyss.stdout)["jobs_skipped"] == 0  # PYSS keeps it as a 1-second job
    bad = runner.invoke(app, ["simulate", "-w", str(trace), "--swf-reading", "pyss,size=big"])
    assert bad.exit_code == 2 and "size='big'" in bad.output

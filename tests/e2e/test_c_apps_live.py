"""Jacobi in C and Fortran (libdmr) under the control service on the real cluster: grown onto idle
nodes, shrunk when a rigid job arrives, its grid equal to one rank's, the job ending with exit code 0."""

from __future__ import annotations

import json

import pytest

from dmr_apps import build
from slurm_ext.config import load_config
from slurm_ext.demo.malleable import malleable_demo
from slurm_ext.slurm import SlurmCluster

from .conftest import sh

pytestmark = pytest.mark.slurm

PPN = 2


def sacct_exit_codes(job_id: int) -> dict[str, tuple[str, str]]:
    """{job or step id: (state, exit code)} from accounting."""
    out = sh("sacct", "-n", "-P", "-j", str(job_id), "-o", "JobID,State,ExitCode")
    return {i: (st, code) for i, st, code in (ln.split("|") for ln in out.splitlines() if ln)}


@pytest.mark.parametrize("strategy", ["merge", "expander"])
def test_c_jacobi_grows_shrinks_for_a_rigid_job_and_checks_its_grid(slurm, tmp_path, strategy):
    """`slurm-ext demo --app c`'s scenario: 2 ranks on 1 node, grown onto idle nodes, shrunk when a
    rigid job cannot start, finished with the grid of one rank sweeping alone."""
    said: list[str] = []

    def say(line: str) -> None:  # printed too: a failure's report shows the scenario's narration
        said.append(line)
        print(line, flush=True)

    backend = SlurmCluster(load_config().cluster.slurm_conf)
    try:
        res = malleable_demo(backend, say, max_nodes=4, ppn=PPN, strategy=strategy, workdir=tmp_path, app="c")
    except Exception:
        for path in sorted(tmp_path.glob("dmr-demo-*/*")):  # the service's events and the app's output
            if path.suffix in (".jsonl", ".out"):
                print(f"--- {path.name}\n{path.read_text()[-6000:]}")
        raise
    slurm.jobs.append(res["job_id"])
    assert res["ok"] and res["max_diff"] == 0 and res["language"] == "c", (res, said)
    kinds = [r[1] for r in res["resizes"]]
    assert kinds and kinds[0] == "expand" and "shrink" in kinds, res["resizes"]
    assert said[-1].endswith("left behind: none"), said
    # the leaving ranks' exit fails nothing: the job and each of its steps end with exit code 0
    job = res["job_id"]
    codes = slurm.wait(lambda: _finished(sacct_exit_codes(job)), timeout=30)
    assert codes[str(job)] == ("COMPLETED", "0:0"), codes
    assert all(code == "0:0" for _, code in codes.values()), codes


def test_fortran_jacobi_resizes_asynchronously_and_checks_its_grid(slurm, make_service, tmp_path):
    server = make_service("merge")
    host, port = server.address
    prog = build("jacobi", "fortran", tmp_path)
    # launched on 1 node x 2 ranks; asks for 8 ranks from step 1, 2 from step 3, asynchronously
    # (dmr_icheck_status: each answer is carried out one step later)
    script = (f"dmr-run --ppn {PPN} -- {prog} --n 96 --steps 7 --sweeps 30 --max {4 * PPN} "
              f"--plan 1:{4 * PPN},3:{PPN} --async --model-seconds 4\necho dmr-run-exit $?")  # fmt: skip
    env = {"DMR_SERVICE": f"{host}:{port}"}
    job = slurm.sbatch(1, script, "jacobi-f", env, args=(f"--ntasks-per-node={PPN}",))
    slurm.wait_gone(job, timeout=180)
    out = slurm.output("jacobi-f", job)
    line = next((ln for ln in out.splitlines() if ln.startswith("JACOBI_RESULT ")), None)
    assert line is not None, out
    res = json.loads(line.removeprefix("JACOBI_RESULT "))
    assert res["ok"] and res["max_diff"] == 0 and res["language"] == "fortran", res
    kinds = [(r[1], r[2], r[3]) for r in res["resizes"]]
    assert ("expand", PPN, 4 * PPN) in kinds and ("shrink", 4 * PPN, PPN) in kinds, kinds
    assert "dmr-run-exit 0" in out


def _finished(codes: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]] | None:
    """The codes once the job's last record is final (a resized job keeps earlier RESIZING records)."""
    return codes if codes and codes.get(next(iter(codes)), ("",))[0] not in ("RUNNING", "RESIZING") else None


def test_latency_benchmark_runs_the_c_worker(local_cluster, tmp_path):
    """`slurm-ext bench latency --app c` end to end at a small size (its numbers are not judged here),
    its service's events log kept (`--events`)."""
    from slurm_ext.bench.latency import run
    from slurm_ext.service.events import read_events

    kept = tmp_path / "events.jsonl"
    res = run("merge", cycles=1, no_action=20, state_mb=1, settle=0.5, app="c", events_out=kept)
    assert res["app"] == "c" and res["checksum_ok"] and res["helpers_left"] == []
    assert res["events"] == str(kept) and sum(e.get("kind") == "decision" for e in read_events(kept)) >= 20
    # of the cycle's two expands and two shrinks, an expand onto the node the shrink before released
    # may be answered "no action" while Slurm still completes that node (the benchmark reports it)
    assert res["no_action"]["n"] == 20 and res["expand_total"]["n"] >= 1 and res["shrink_app"]["n"] == 2, res[
        "answers"
    ]

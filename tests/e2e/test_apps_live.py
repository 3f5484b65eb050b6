"""CG, Jacobi and N-body under the control service on the real cluster: grown, shrunk, still right."""

from __future__ import annotations

import json
import sys

import pytest

pytestmark = pytest.mark.slurm

# --model-seconds: each step lasts a moment (these problems compute in milliseconds), so a check
# that finds the service briefly unreachable is retried within the run
APPS = {
    "jacobi": "--n 96 --steps 6 --sweeps 30 --model-seconds 2",
    "cg": "--n 64 --steps 12 --iters 15 --model-seconds 2",
    "nbody": "--bodies 128 --steps 6 --substeps 10 --model-seconds 2",
}


@pytest.mark.parametrize("strategy", ["merge", "expander"])
@pytest.mark.parametrize("app", sorted(APPS))
def test_app_grows_and_shrinks_and_checks_its_result(slurm, make_service, app, strategy):
    server = make_service(strategy)
    host, port = server.address
    # launched on 2 nodes, one rank each: 4 ranks from step 1, 1 rank from step 3
    script = (f"{sys.executable} -m dmr --ppn 1 -- {sys.executable} -m apps.{app} {APPS[app]} "
              f"--max 4 --plan 1:4,3:1\necho dmr-run-exit $?")  # fmt: skip
    job = slurm.sbatch(2, script, app, {"DMR_SERVICE": f"{host}:{port}"}, args=("--ntasks-per-node=1",))
    slurm.wait_gone(job, timeout=240)
    out = slurm.output(app, job)
    line = next((ln for ln in out.splitlines() if "_RESULT " in ln), None)
    assert line is not None, out
    res = json.loads(line.split("_RESULT ", 1)[1])
    assert res["ok"], res
    kinds = [(r[1], r[2], r[3]) for r in res["resizes"]]
    assert ("expand", 2, 4) in kinds and ("shrink", 4, 1) in kinds, kinds
    assert "dmr-run-exit 0" in out

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
    # launched on 2 nodes: 4 nodes from step 1, 1 node from step 3; merge with one rank per node,
    # expander jobs with two (sizes in ranks: 2 -> 4 -> 1, or 4 -> 8 -> 2)
    ppn = 1 if strategy == "merge" else 2
    script = (f"{sys.executable} -m dmr --ppn {ppn} -- {sys.executable} -m dmr_apps.{app} {APPS[app]} "
              f"--max {4 * ppn} --plan 1:{4 * ppn},3:{ppn}\necho dmr-run-exit $?")  # fmt: skip
    env = {"DMR_SERVICE": f"{host}:{port}"}
    job = slurm.sbatch(2, script, app, env, args=(f"--ntasks-per-node={ppn}",))
    slurm.wait_gone(job, timeout=240)
    out = slurm.output(app, job)
    line = next((ln for ln in out.splitlines() if "_RESULT " in ln), None)
    assert line is not None, out
    res = json.loads(line.split("_RESULT ", 1)[1])
    assert res["ok"], res
    kinds = [(r[1], r[2], r[3]) for r in res["resizes"]]
    assert ("expand", 2 * ppn, 4 * ppn) in kinds and ("shrink", 4 * ppn, ppn) in kinds, kinds
    assert "dmr-run-exit 0" in out

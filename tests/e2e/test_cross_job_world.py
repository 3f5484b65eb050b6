"""Worlds of groups on the live cluster: both expansion strategies, shrink below the launch size,
two ranks per node, expander jobs on a Slurm that refuses in-place growth, and their failures.

FS runs under ``dmr-run --ppn 2`` and asks for exact sizes (``--plan``, in ranks), so each test
knows the resize sequence it must see. After every test no resizer or expander job is left
(the service fixtures check), and every node is idle again.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest

from slurm_ext import protocol as p
from slurm_ext.backend import EXPANDER_PREFIX
from slurm_ext.service.inflight import Reconf

from .conftest import Slurm, idle_nodes, sh

pytestmark = pytest.mark.slurm

# ranks with 2 per node: 1 -> 2 -> 4 -> 1 -> 3 nodes
FROM_ONE = "--steps 10 --step-seconds 1 --state-mb 16 --plan 0:2,1:4,3:8,5:2,7:6"
FROM_TWO = "--steps 8 --step-seconds 1 --state-mb 16 --plan 0:4,1:8,3:2,5:6"


def resizes(res: dict) -> list[list]:
    return [r[:4] for r in res["resizes"]]


def all_idle(slurm: Slurm, nodes: int) -> None:
    slurm.wait(lambda: idle_nodes(slurm.conf) >= nodes, timeout=30)


def sizes(res: dict) -> list[tuple[str, int, int]]:
    return [(kind, old, new) for _, kind, old, new in resizes(res)]


@pytest.mark.parametrize("strategy", ["merge", "expander"])
def test_fs_grows_shrinks_below_launch_and_grows_again(slurm, make_service, strategy):
    service = make_service(strategy)
    one = slurm.dmr_fs(service.address, 1, FROM_ONE, name="fs1")
    two = slurm.dmr_fs(service.address, 2, FROM_TWO, name="fs2")
    slurm.wait_gone(one, 180)
    slurm.wait_gone(two, 180)
    res1, res2 = slurm.fs_result("fs1", one), slurm.fs_result("fs2", two)
    assert res1["checksum_ok"] and res2["checksum_ok"], (res1, res2)
    # the planned steps; a growth may come a step late when the other job's nodes are still being freed
    assert sizes(res1) == [("expand", 2, 4), ("expand", 4, 8), ("shrink", 8, 2), ("expand", 2, 6)]
    assert [r[0] for r in resizes(res1)][:3] == [1, 3, 5]
    # launched on 2 nodes, it goes down to 1 (below its launch size) and up to 3
    assert sizes(res2) == [("expand", 4, 8), ("shrink", 8, 2), ("expand", 2, 6)]
    assert [r[0] for r in resizes(res2)][:2] == [1, 3]
    assert res1["final_size"] == 6 and res2["final_size"] == 6
    assert "dmr-run-exit 0" in slurm.output("fs1", one) and "dmr-run-exit 0" in slurm.output("fs2", two)
    assert service.controller.strategy == strategy
    all_idle(slurm, 8)


def test_mixed_strategies_in_one_run_and_expanders_end_with_the_application(slurm, make_service):
    service = make_service("merge")
    ctl = service.controller
    job = slurm.dmr_fs(service.address, 1, "--steps 8 --step-seconds 1.5 --state-mb 16 --plan 0:2,1:4,3:8")

    def switch() -> None:  # after the first expansion (a merge), expand with an expander job
        deadline = time.monotonic() + 120
        while not ctl.timings["expand"] and time.monotonic() < deadline:
            time.sleep(0.05)
        ctl._strategy = "expander"

    threading.Thread(target=switch, daemon=True).start()
    slurm.wait(
        lambda: any(n.startswith(EXPANDER_PREFIX) and st == "RUNNING" for _, n, st in slurm.squeue()), 120
    )
    slurm.wait_gone(job, 180)
    res = slurm.fs_result("fs", job)
    assert res["checksum_ok"], res
    assert resizes(res) == [[1, "expand", 2, 4], [3, "expand", 4, 8]]
    # the application ended while an expander job hosted half of its ranks: that job ends too
    slurm.wait(lambda: not any(n.startswith(EXPANDER_PREFIX) for _, n, _ in slurm.squeue()), 30)
    all_idle(slurm, 8)


def test_auto_uses_expander_jobs_where_slurm_refuses_in_place_growth(stock, make_service):
    service = make_service("auto", conf=stock.conf)
    assert "permit_job_expansion" not in sh("scontrol", "show", "config", conf=stock.conf)
    job = stock.dmr_fs(service.address, 1, "--steps 7 --step-seconds 1 --state-mb 16 --plan 0:2,1:4,3:8,5:2")
    stock.wait_gone(job, 180)
    res = stock.fs_result("fs", job)
    assert res["checksum_ok"], res
    assert resizes(res) == [[1, "expand", 2, 4], [3, "expand", 4, 8], [5, "shrink", 8, 2]]
    assert service.controller.strategy == "expander"
    all_idle(stock, 4)


def test_expander_that_cannot_start_in_time_is_no_action_and_cancelled(stock, make_service):
    service = make_service("expander", conf=stock.conf, expand_timeout=3)
    holder = stock.sbatch(1, "sleep 120", "holder")
    stock.wait(lambda: (stock.job(holder) or {}).get("state") == "RUNNING", 30)
    filler = stock.sbatch(3, "sleep 120", "filler")
    stock.wait(lambda: (stock.job(filler) or {}).get("state") == "RUNNING", 30)
    ctl = service.controller
    node = stock.job(holder)["nodelist"]
    reconf = Reconf(holder, "expand", 1, 2, [node])
    assert ctl.inflight.begin(reconf)
    asking = p.Check(job_id=holder, current=1, min=1, max=2, nodes=[node], agent="127.0.0.1:1:k",
                     python=sys.executable)  # fmt: skip
    decision = ctl._expand(reconf, asking)
    assert decision.action == "none" and "did not start within 3 s" in decision.reason, decision.reason
    assert ctl.inflight.get(holder) is None
    assert not any(n.startswith(EXPANDER_PREFIX) for _, n, _ in stock.squeue())


def test_expander_ranks_killed_before_they_connect_is_no_action(stock, make_service):
    service = make_service("expander", conf=stock.conf)
    args = "--steps 6 --step-seconds 1 --state-mb 16 --plan 0:2,1:4 --join-delay 30"
    job = stock.dmr_fs(service.address, 1, args, env={"DMR_JOIN_TIMEOUT": "8"})

    def expander_steps() -> list[str]:
        out = sh("squeue", "-h", "-s", "-o", "%i %j", conf=stock.conf)
        return [
            ln.split()[0] for ln in out.splitlines() if "dmr-group" in ln and not ln.startswith(f"{job}.")
        ]

    steps = stock.wait(expander_steps, 60, every=0.1)
    sh("scancel", *steps, conf=stock.conf)  # the new ranks die while they wait to connect
    stock.wait_gone(job, 120)
    res = stock.fs_result("fs", job)
    assert res["checksum_ok"] and resizes(res) == [] and res["final_size"] == 2, res
    stock.wait(lambda: not any(n.startswith(EXPANDER_PREFIX) for _, n, _ in stock.squeue()), 30)
    all_idle(stock, 4)

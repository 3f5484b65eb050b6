"""SD-Policy sharing cores (003_* §3.3-3.4): nodes of two slots, a mate lends one slot on each node
it shares, the new job runs on its requested nodes; the ideal and worst-case runtime models."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from slurm_ext.cli import app
from slurm_ext.decisions import Shrink, StartJob
from slurm_ext.policies.sdpolicy import SDPolicy, slots_per_node
from slurm_ext.policies.working_view import WorkingView
from slurm_ext.sim.engine import Simulator, rigid_job, simulate
from slurm_ext.workloads import load_workload
from slurm_ext.workloads.model import Workload, node_slots
from tests.unit.slurm_ext.policies.helpers import by_type, pending, running, snapshot

NOW = 1000.0


def _decide(total_nodes: int, jobs: list) -> list:
    return SDPolicy(share_cores=True).decide(snapshot(2 * total_nodes, jobs, NOW))


def test_a_mate_lends_one_slot_on_each_node_the_new_job_shares() -> None:
    mate = running(1, 8, 10_000.0, start=0.0, mall=(4, 8), limit=10_000.0)  # 4 nodes, all 8 slots
    new = pending(10, 4, 100.0, submit=NOW, mall=(2, 4))  # 2 nodes asked, no node idle
    d = _decide(4, [mate, new])
    assert [(s.job_id, s.new_size, s.for_job) for s in by_type(d, Shrink)] == [(1, 6, 10)]
    # on its 2 nodes, one slot of each: half its cores, twice its requested time (Eq. 5)
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(10, 2)]


def test_the_new_job_takes_idle_nodes_whole_and_shares_the_rest() -> None:
    mate = running(1, 8, 10_000.0, start=0.0, mall=(4, 8), limit=10_000.0)
    new = pending(10, 4, 100.0, submit=NOW, mall=(2, 4))
    d = _decide(5, [mate, new])  # one node idle: the new job gets it whole and one slot of the mate's
    assert [(s.job_id, s.new_size) for s in by_type(d, Shrink)] == [(1, 7)]
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(10, 3)]


def test_a_mate_lends_only_on_nodes_it_holds_whole_and_a_borrower_lends_nothing() -> None:
    pol = SDPolicy(share_cores=True)
    mate = running(1, 6, 10_000.0, mall=(4, 8))  # 4 nodes, one already shared
    borrower = running(2, 3, 10_000.0, mall=(2, 4))
    cl = WorkingView(snapshot(10, [mate, borrower], NOW))
    pol.loans[2] = ((1, 1),)
    assert pol._cap(cl.running[1]) == 2  # its two nodes left whole
    assert pol._cap(cl.running[2]) == 0


def test_sharing_factors_that_do_not_split_a_node_evenly_are_refused() -> None:
    assert slots_per_node(0.5) == 2 and slots_per_node(0.25) == 4
    with pytest.raises(ValueError, match="1/2, 1/3"):
        SDPolicy(share_cores=True, sharing_factor=0.3)
    with pytest.raises(ValueError, match="worst-case"):
        SDPolicy(runtime_model="worst")  # whole nodes: no node is ever at part of its cores


def test_a_whole_node_schedule_is_unchanged_when_counted_in_slots() -> None:
    wl = load_workload("kth-small", jobs=400)
    nodes, slots = simulate(wl, "easy"), simulate(node_slots(wl, 2), "easy")
    assert list(nodes.start) == list(slots.start) and list(nodes.end) == list(slots.end)
    assert node_slots(wl, 2).nodes == 2 * wl.nodes and node_slots(wl, 2).slots == 2


def _pair() -> Workload:
    """A 4-node mate that ends early (300 s of 5000 asked) and a 2-node job arriving at 10 s."""
    mate = rigid_job(1, 0.0, 4, 5000.0, 300.0)
    new = rigid_job(2, 10.0, 2, 500.0, 400.0)
    return node_slots(Workload([mate, new], 4), 2)


def _ends(result) -> dict[int, float]:
    return {int(j): float(e) for j, e in zip(result.job_id, result.end, strict=True)}


def test_ideal_model_and_the_mates_cores_go_to_the_new_job_when_it_ends_first() -> None:
    res = simulate(_pair(), "easy", SDPolicy(share_cores=True))
    # job 2 starts at 10 on 2 slots (half its cores); the mate runs on 6 of 8 slots: 290 s of work
    # left at 3/4 pace ends it at 10 + 290 / 0.75; job 2 then takes the mate's slots on its nodes
    mate_end = 10 + 290 / 0.75
    assert _ends(res)[1] == pytest.approx(mate_end)
    done = (mate_end - 10) * 0.5
    assert _ends(res)[2] == pytest.approx(mate_end + 400 - done)
    assert [(job, old, new) for _, job, old, new in res.resize_log] == [(1, 8, 6), (2, 2, 4)]


def test_worst_case_model_runs_a_job_on_a_shared_node_at_half_pace() -> None:
    res = Simulator(_pair(), "easy", SDPolicy(share_cores=True, runtime_model="worst"),
                    runtime_model="worst").run()  # fmt: skip
    mate_end = 10 + 290 / 0.5
    assert _ends(res)[1] == pytest.approx(mate_end)
    assert _ends(res)[2] == pytest.approx(mate_end + 400 - (mate_end - 10) * 0.5)
    with pytest.raises(ValueError, match="two slots"):
        Simulator(Workload([rigid_job(1, 0.0, 2, 10.0)], 4), "easy", runtime_model="worst")


def test_worst_case_penalty_halves_the_mates_pace_whatever_it_lends() -> None:
    pol = SDPolicy(share_cores=True, runtime_model="worst")
    mate = running(1, 8, 10_000.0, start=0.0, mall=(4, 8), limit=10_000.0)
    r = WorkingView(snapshot(8, [mate], NOW)).running[1]
    assert pol.penalty(r, 1, 100.0) == pol.penalty(r, 3, 100.0) == pytest.approx((10_000 + 50) / 10_000)
    assert SDPolicy(share_cores=True).penalty(r, 1, 100.0) == pytest.approx((10_000 + 12.5) / 10_000)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["compare", "-p", "easy,dmr", "--share-cores"], "apply to SD-Policy"),
        (["simulate", "-p", "sd", "--runtime-model", "worst"], "worst-case"),
        (["simulate", "-p", "sd", "--share-cores", "--sharing-factor", "0.3"], "1/2, 1/3"),
        (["simulate", "-p", "sd", "--share-cores", "--malleable-fraction", "0.5"], "every job malleable"),
        (["simulate", "-p", "sd", "--runtime-model", "best"], "ideal or worst"),
    ],
)
def test_cli_refuses_options_that_do_not_go_together_with_exit_2(args: list[str], said: str) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and said in res.output, res.output


def test_cli_runs_sd_sharing_cores_beside_easy() -> None:
    res = CliRunner().invoke(app, ["compare", "-p", "easy,sd:10", "--share-cores", "--jobs", "300", "--quiet",
                                   "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert '"policy": "sd:10"' in res.output

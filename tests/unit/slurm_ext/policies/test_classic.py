"""EP/ESF/EDF/LDF: the expand and shrink orders of 000_* §II/§V on hand-built cases."""

from slurm_ext.decisions import Expand, Shrink, StartJob
from slurm_ext.policies.edf import EDF
from slurm_ext.policies.ep import EP
from slurm_ext.policies.esf import ESF
from slurm_ext.policies.ldf import LDF
from tests.unit.slurm_ext.policies.helpers import by_type, pending, running, snapshot


def _three_jobs() -> list:
    # sizes 1, 2, 4; started at 0, 10, 20; expected ends 900, 300, 600; all max 8
    return [
        running(1, 1, 900.0, start=0.0, mall=(1, 8)),
        running(2, 2, 300.0, start=10.0, mall=(1, 8)),
        running(3, 4, 600.0, start=20.0, mall=(1, 8)),
    ]


def _sizes(decisions: list) -> dict[int, int]:
    return {d.job_id: d.new_size for d in by_type(decisions, Expand)}


def test_ep_equalises_sizes() -> None:
    d = EP().decide(snapshot(16, _three_jobs()))  # 9 idle nodes
    sizes = {1: 1, 2: 2, 3: 4} | _sizes(d)
    assert sum(sizes.values()) == 16
    assert max(sizes.values()) - min(sizes.values()) <= 1


def test_ep_respects_maximum() -> None:
    jobs = [running(1, 1, 900.0, mall=(1, 2)), running(2, 1, 900.0, mall=(1, 8))]
    d = EP().decide(snapshot(10, jobs))
    assert _sizes(d) == {1: 2, 2: 8}


def test_esf_fills_the_earliest_started_job_first() -> None:
    d = ESF().decide(snapshot(10, _three_jobs()))  # 3 idle
    assert _sizes(d) == {1: 4}


def test_edf_fills_the_earliest_deadline_first() -> None:
    d = EDF().decide(snapshot(10, _three_jobs()))
    assert _sizes(d) == {2: 5}


def test_ldf_fills_the_latest_deadline_first() -> None:
    d = LDF().decide(snapshot(17, _three_jobs()))  # 10 idle: job 1 to 8, then job 3 gets 3
    assert _sizes(d) == {1: 8, 3: 7}


def test_head_job_starts_by_shrinking_expanded_jobs() -> None:
    # all 8 nodes held by two expanded jobs (min 2); a 4-node job arrives
    jobs = [running(1, 5, 900.0, mall=(2, 8)), running(2, 3, 300.0, mall=(2, 8)), pending(3, 4, 100.0)]
    d = EP().decide(snapshot(8, jobs))
    shr = by_type(d, Shrink)
    assert [(s.job_id, s.new_size) for s in shr] == [(1, 2), (2, 2)]  # equal shrink: largest first
    start = by_type(d, StartJob)
    assert [(s.job_id, s.nodes) for s in start] == [(3, 4)]
    assert d.index(shr[-1]) < d.index(start[0])


def test_edf_shrinks_latest_deadline_first() -> None:
    jobs = [running(1, 5, 900.0, mall=(2, 8)), running(2, 3, 300.0, mall=(2, 8)), pending(3, 3, 100.0)]
    d = EDF().decide(snapshot(8, jobs))
    assert [(s.job_id, s.new_size) for s in by_type(d, Shrink)] == [(1, 2)]


def test_no_shrink_if_it_cannot_free_enough_then_expand_and_backfill() -> None:
    # 2 idle; the head needs 5 nodes and shrinking job 1 frees only 1
    jobs = [running(1, 3, 900.0, mall=(2, 5)), pending(2, 5, 100.0), pending(3, 1, 50.0, submit=1.0)]
    d = ESF().decide(snapshot(5, jobs))
    assert by_type(d, Shrink) == []
    # the expand phase runs before backfilling (000_* §IV.C), so the 1-node job finds no node
    assert _sizes(d) == {1: 5}
    assert by_type(d, StartJob) == []
    # with a smaller maximum one node is left and the short job is backfilled
    jobs[0] = running(1, 3, 900.0, mall=(2, 4))
    d = ESF().decide(snapshot(5, jobs))
    assert _sizes(d) == {1: 4}
    assert [(s.job_id, s.nodes) for s in by_type(d, StartJob)] == [(3, 1)]

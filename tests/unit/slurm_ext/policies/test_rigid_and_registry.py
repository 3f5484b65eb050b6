import pytest

from slurm_ext.policies import POLICIES, make_policy
from slurm_ext.policies.backfill import Backfill
from slurm_ext.policies.rigid import Rigid
from slurm_ext.policies.sdpolicy import SDPolicy
from tests.unit.slurm_ext.policies.helpers import pending, running, snapshot


def test_rigid_returns_nothing_and_leaves_scheduling_to_the_caller() -> None:
    snap = snapshot(8, [running(1, 2, 100.0, mall=(1, 8)), pending(2, 2, 50.0)])
    assert Rigid().decide(snap) == []
    assert Rigid.schedules_jobs is False


def test_backfill_baseline_starts_at_submitted_size_and_never_resizes() -> None:
    snap = snapshot(8, [running(1, 2, 100.0, mall=(1, 8)), pending(2, 4, 50.0, mall=(1, 8))])
    d = Backfill().decide(snap)
    assert [(x.job_id, x.nodes) for x in d] == [(2, 4)]


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_registered_policy_builds_and_runs(name: str) -> None:
    pol = make_policy(name)
    assert isinstance(pol.decide(snapshot(4, [pending(1, 2, 10.0)])), list)


def test_self_scheduling_flags() -> None:
    for name in ("dbes", "ep", "esf", "edf", "ldf", "minagree", "sd", "sd-dynamic", "backfill", "easy"):
        assert make_policy(name).schedules_jobs, name
    assert not make_policy("rigid").schedules_jobs


def test_unknown_name_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="dbes.*minagree"):
        make_policy("nope")


def test_bad_options_fail_early() -> None:
    with pytest.raises(ValueError, match="reservation_depth"):
        make_policy("dbes", reservation_depth=0)
    with pytest.raises(ValueError, match="max_slowdown"):
        make_policy("sd", max_slowdown=0.5)


@pytest.mark.parametrize(("name", "limit"), [("sd:5", 5.0), ("sd:50", 50.0), ("sd:inf", float("inf")),
                                             ("sd:dynamic", "dynamic"), ("sd", 10.0)])  # fmt: skip
def test_sd_takes_its_max_slowdown_after_a_colon(name: str, limit: float | str) -> None:
    policy = make_policy(name)
    assert isinstance(policy, SDPolicy) and policy.max_slowdown == limit


@pytest.mark.parametrize(("name", "said"), [("sd:0.5", "max_slowdown must be a number > 1"),
                                            ("sd:x", "sd:x: MAX_SLOWDOWN must be"),
                                            ("easy:3", "'easy' takes no argument")])  # fmt: skip
def test_a_bad_argument_is_named(name: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        make_policy(name)

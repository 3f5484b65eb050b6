"""The runtime on one in-process rank: argument checks, one warning, the inhibitor, async asking."""

from __future__ import annotations

import time
import warnings

import pytest

from dmr import client as dmr_client
from dmr.config import DMRArgumentError, Settings, reachable, validate
from dmr.inhibitor import Inhibitor
from dmr.runtime import Action, Runtime
from slurm_ext.backend import JobRequest
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.sim import SimCluster


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    dmr_client._warned.clear()
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)


JOB = 1


@pytest.fixture
def service():
    cluster = SimCluster.empty(4)
    assert cluster.submit(JobRequest(1)) == JOB  # the job the runtime's rank belongs to
    cluster.submit(JobRequest(3))  # the cluster is full: every answer is "no action", nothing spawns
    ctl = Controller(cluster, DMRPolicy(), ServiceOptions(snapshot_interval=0.05))
    server = Server(ctl, port=0)
    server.start()
    yield server
    server.stop()


def runtime(address=("127.0.0.1", 1), **kw) -> Runtime:
    return Runtime(settings=Settings(service=address, timeout=5.0, **kw))


# -- arguments -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((4, 2, 2, None), "min_procs (4) > max_procs (2)"),
        ((1, 4, 1, None), "factor must be >= 2"),
        ((1, 4, 2, 8), "preferred (8) outside"),
        ((1, 4, 2, 3), "preferred (3) is not reachable from 1"),
        ((3, 3, 2, None), "no size in [3, 3] is reachable from 1"),
        ((0, 4, 2, None), "min_procs must be >= 1"),
    ],
)
def test_invalid_arguments_raise_a_clear_error_at_the_call(args, message):
    rt = runtime()
    with pytest.raises(DMRArgumentError) as err:
        rt.check(*args)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_reachable_sizes():
    assert reachable(1, 1, 8, 2) == [1, 2, 4, 8]
    assert reachable(8, 1, 4, 2) == [1, 2, 4]
    assert reachable(3, 1, 12, 3) == [1, 3, 9]
    validate(1, 8, 2, 4, current=1)


# -- no service, no job ------------------------------------------------------------------------------
def test_outside_slurm_one_warning_and_no_action():
    rt = runtime()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        results = [rt.check(1, 4) for _ in range(5)]
    assert all(r == (Action.NONE, 1, None) for r in results)
    msgs = [str(w.message) for w in seen if issubclass(w.category, dmr_client.DMRWarning)]
    assert len(msgs) == 1 and "not in a Slurm job" in msgs[0]


def test_unreachable_service_one_warning_and_no_action(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", str(JOB))
    rt = runtime(("127.0.0.1", 9))  # nothing listens on port 9
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        results = [rt.check(1, 4) for _ in range(5)]
    assert all(r[0] is Action.NONE for r in results)
    msgs = [str(w.message) for w in seen if issubclass(w.category, dmr_client.DMRWarning)]
    assert len(msgs) == 1 and "unreachable" in msgs[0]


# -- with a service ------------------------------------------------------------------------------------
def test_check_reaches_the_service(monkeypatch, service):
    monkeypatch.setenv("SLURM_JOB_ID", str(JOB))
    rt = runtime(service.address)
    assert rt.check(1, 4)[0] is Action.NONE
    assert service.controller.counters["check"] == 1


def test_inhibitor_every_n_calls_skips_the_service(monkeypatch, service):
    monkeypatch.setenv("SLURM_JOB_ID", str(JOB))
    rt = runtime(service.address, inhibit_calls=3)
    for _ in range(7):
        rt.check(1, 4)
    assert service.controller.counters["check"] == 3  # calls 1, 4, 7


def test_inhibitor_seconds_skips_the_service(monkeypatch, service):
    monkeypatch.setenv("SLURM_JOB_ID", str(JOB))
    rt = runtime(service.address, inhibit_seconds=60)
    for _ in range(5):
        rt.check(1, 4)
    assert service.controller.counters["check"] == 1


def test_async_first_call_returns_no_action_and_leaves_the_question_pending(monkeypatch, service):
    monkeypatch.setenv("SLURM_JOB_ID", str(JOB))
    rt = runtime(service.address)
    assert rt.check(1, 4, asynchronous=True)[0] is Action.NONE
    assert rt.client is not None and rt.client.pending  # asked, answer read at the next step
    rt.check(1, 4, asynchronous=True)  # reads answer 1, asks question 2 without waiting
    deadline = time.monotonic() + 5
    while service.controller.counters["check"] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert service.controller.counters["check"] == 2
    rt.close()


def test_inhibitor_clock():
    now = [0.0]
    inh = Inhibitor(seconds=10, calls=2, clock=lambda: now[0])
    assert [inh.allow(), inh.allow()] == [True, False]
    now[0] = 5
    assert [inh.allow(), inh.allow()] == [False, False]
    now[0] = 11
    assert inh.allow() is True

"""The live EJB manager's pure parts: sbatch lines, slots from Slurm's backfill plan, saved state."""

from __future__ import annotations

import math
import pickle

import pytest

from dmr.launch import is_spare_of, is_subjob_of, spare_name
from ejb.live import jobs
from ejb.live.probe import backfill_agrees, idle_or_planned, planned_before, slots_from_plan
from ejb.live.records import AppRecord, Migration, Store, SubjobRecord
from ejb.model import Target
from ejb.params import EJBParams
from ejb.scheduler import EJBScheduler
from ejb.slots import SlotKind
from slurm_ext.model import Node, NodeState, Snapshot

NOW = 1_000_000.0


def test_a_subjob_keeps_the_users_options_and_gets_ejbs_shape_name_output_and_pilot():
    options: list[list[str | None]] = [
        ["-N", "6"], ["--ntasks-per-node", "2"], ["-t", "10"], ["-A", "physics"], ["--qos", "high"],
        ["-J", "mine"], ["-o", "x.out"], ["--parsable", None], ["--export", "ALL,FOO=1"], ["--mem", "4G"],
    ]  # fmt: skip
    argv = jobs.subjob_argv(options, ["job.sh", "arg"], 2, 900, "ejb70.1", "/w/slurm-70.out")
    assert argv[:2] == ["sbatch", "--parsable"]
    assert argv[-2:] == ["job.sh", "arg"]
    assert argv[2:4] == ["-A", "physics"] and "--mem=4G" in argv and "--qos=high" in argv
    for gone in ("6", "10", "mine", "x.out"):
        assert gone not in argv
    assert {
        "-N",
        "2",
        "--job-name=ejb70.1",
        "--time=15",
        "--output=/w/slurm-70.out",
        "--open-mode=append",
    } <= set(argv)
    assert "--export=ALL,FOO=1,DMR_PILOT" in argv  # its value from sbatch's environment
    assert argv.count("--parsable") == 1


THEIRS = [[], [["--exclusive", "user"]], [["-s", None]], [["--oversubscribe", None]], [["--exclusive", None]]]


@pytest.mark.parametrize("theirs", THEIRS)
def test_a_subjob_has_whole_nodes_whatever_the_user_asked(theirs: list[list[str | None]]) -> None:
    argv = jobs.subjob_argv(theirs, ["job.sh"], 2, 900, "ejb70.1", "/w/o")
    assert argv.count("--exclusive") == 1  # EJB over-subscribes its nodes: no one else's job there
    assert not any(w in ("-s", "--oversubscribe") or w.startswith("--exclusive=") for w in argv)


def test_a_subjob_never_carries_the_users_array_dependency_begin_mail_or_requeue():
    options: list[list[str | None]] = [
        ["--array", "1-10%2"], ["--dependency", "afterok:5"], ["--begin", "now+1hour"],
        ["--mail-type", "ALL"], ["--mail-user", "me@x"], ["--requeue", None], ["--account", "physics"],
    ]  # fmt: skip
    argv = jobs.subjob_argv(options, ["job.sh"], 2, 900, "ejb70.1", "/w/o")
    users = ("--array", "--dependency", "--begin", "--mail-user", "--requeue")
    assert not any(w.startswith(users) for w in argv)
    # and what the script's #SBATCH lines may ask for is overridden on the command line
    assert "--mail-type=NONE" in argv and "--no-requeue" in argv and "--account=physics" in argv


def test_an_unlimited_subjob_has_no_time_option_and_export_none_keeps_only_the_pilot():
    argv = jobs.subjob_argv([["--export", "NONE"]], ["--wrap", "dmr-run -- a.py"], 1, math.inf, "ejb1.2", "")
    assert not any(a.startswith("--time") or a.startswith("--output") for a in argv)
    assert "--export=DMR_PILOT" in argv and argv[-2:] == ["--wrap", "dmr-run -- a.py"]


def test_a_spare_is_a_held_subjob_named_apart_from_the_subjobs():
    argv = jobs.spare_argv([["-A", "x"]], ["job.sh"], 70, 2, 300, "/w/o", "")
    assert argv == jobs.subjob_argv([["-A", "x"]], ["job.sh"], 1, 300, spare_name(70, 2), "/w/o", hold=True)
    assert "--hold" in argv and "--job-name=ejb70.spare2" in argv and argv[-1] == "job.sh"
    assert "--hold" not in jobs.subjob_argv([], ["job.sh"], 1, 300, "ejb70.1", "/w/o")
    # a spare is not a subjob (the placeholder's pilot never counts one as hosting its application)
    assert is_spare_of("ejb70.spare2", 70) and not is_subjob_of("ejb70.spare2", 70)
    assert not is_spare_of("ejb70.2", 70) and not is_spare_of("ejb701.spare2", 70)


def test_j0_is_the_job_as_typed_appending_to_its_output_with_a_pilot():
    argv = jobs.j0_argv([("-N", "4"), ("--parsable", None), ("--wrap", "x")], ["--wrap", "x"])
    # --export=ALL as typed (anything else has slurmd load the user's login environment): the pilot
    # goes in sbatch's environment
    assert argv == ["sbatch", "--parsable", "-N", "4", "--open-mode=append", "--export=ALL", "--wrap", "x"]
    assert jobs.pilot_env({"HOME": "/h"}, "h:1:s:j0") == {"HOME": "/h", "DMR_PILOT": "h:1:s:j0"}


def test_slots_follow_slurms_plan_type_one_is_idle_nodes_nobody_is_planned_on():
    plan = {70: (NOW + 120, ("n1", "n2", "n3", "n4", "n5", "n7"))}
    slots = slots_from_plan(NOW, ["n6", "n7", "n8"], plan)
    assert slots is not None
    assert slots.type1 is not None and slots.type1.kind is SlotKind.TYPE_I and slots.type1.procs == 2
    assert slots.type2 is not None and slots.type2.procs == 3 and slots.type2.duration == 120
    assert slots_from_plan(NOW, ["n7"], {}) is None  # no plan: the caller falls back to the EASY view
    assert slots_from_plan(NOW, ["n7"], {70: (None, ())}) is None


def test_idle_nodes_planned_for_a_pending_job_are_a_type_two_slot_until_its_start():
    # Slurm 23.02+ marks them PLANNED (not free in a snapshot); the probe counts them, with the plan
    nodes = (Node("n1", NodeState.OTHER, planned=True), Node("n2", NodeState.OTHER, planned=True),
             Node("n3", NodeState.ALLOCATED), Node("n4", NodeState.OTHER))  # fmt: skip
    idle = idle_or_planned(Snapshot(time=NOW, nodes=nodes, jobs=()))
    assert idle == ["n1", "n2"]
    slots = slots_from_plan(NOW, idle, {9: (NOW + 1800, ("n1", "n2", "n3"))})
    assert slots is not None and slots.type1 is None
    assert slots.type2 is not None and slots.type2.procs == 2 and slots.type2.duration == 1800


def test_test_only_agrees_when_backfill_would_start_the_job_now():
    plan = {70: (NOW + 120, ("n1", "n2"))}
    assert backfill_agrees(NOW, ["n7", "n8"], plan, NOW + 1, ("n7", "n8"), 900)
    # reported later, but on idle nodes nobody waits for: backfill starts it at once
    assert backfill_agrees(NOW, ["n7", "n8"], plan, NOW + 200, ("n7", "n8"), 900)
    # later on a node planned for job 70 before the subjob would end: no
    assert not backfill_agrees(NOW, ["n1", "n7"], plan, NOW + 200, ("n1", "n7"), 900)
    assert backfill_agrees(NOW, ["n1", "n7"], plan, NOW + 200, ("n1", "n7"), 100)
    # on nodes that are busy now: no
    assert not backfill_agrees(NOW, ["n7"], plan, NOW + 200, ("n5", "n7"), 60)


def test_the_nodes_planned_for_a_pending_job_are_left_out_of_the_question():
    plan = {70: (NOW + 120, ("n1", "n2", "n5", "n6")), 71: (NOW + 2000, ("n7",)), 72: (None, ())}
    # a 900-s subjob would delay job 70 (n1, n2, n5, n6), not job 71
    assert planned_before(plan, NOW + 900) == ["n1", "n2", "n5", "n6"]
    assert planned_before(plan, NOW + 3000) == ["n1", "n2", "n5", "n6", "n7"]
    assert planned_before(plan, NOW + 60) == []  # it ends before anybody's start


def test_the_state_survives_a_restart(tmp_path):
    sched = EJBScheduler(EJBParams(min_procs=2))
    sched.arrive(70, Target(6, 300.0), NOW)
    sched.bound(70, 0, 70, NOW)
    app = AppRecord(eid=70, owner="root", uid=0, options=[["-N", "6"]], script=["job.sh"], cwd="/w", env={},
                    ppn=2, nodes=6, limit=300.0)  # fmt: skip
    app.subjobs[0] = SubjobRecord(0, 70, 6, 300.0, "s0")
    app.subjobs[1] = SubjobRecord(1, 71, 2, 900.0, "s1", state="running", hosts=["n7", "n8"], members=True)
    app.subjobs[2] = SubjobRecord(2, 73, 1, 300.0, "x1", spare=1)  # a spare used as subjob 2
    app.spare_secrets, app.spares = ["x0", "x1", "x2"], {0: 72, 2: 74}  # int keys, as JSON does not keep them
    app.spares_asked, app.spares_refused = {3: NOW}, "sbatch: error: QOSMaxSubmitJobPerUserLimit"
    app.migration = Migration([0], [1], phase="shrink", token="t")
    app.log(NOW, "registered")
    store = Store(tmp_path / "state")
    store.save({70: app}, sched)
    apps, loaded = Store(tmp_path / "state").load()
    assert apps[70] == app
    assert loaded is not None and loaded.owner(71) is None and loaded.owner(70) is not None
    assert (tmp_path / "state" / "apps.json").stat().st_mode & 0o777 == 0o600
    assert pickle.loads((tmp_path / "state" / "scheduler.pickle").read_bytes()).jobs.keys() == {70}
    assert Store(tmp_path / "empty").load() == ({}, None)


def test_j0s_output_pattern_is_filled_in_as_for_j0():
    from slurm_ext.model import Job, JobState

    j0 = Job(70, JobState.PENDING, 4, name="sim", user="ana")
    assert jobs.output_of("/w/out-%j-%x-%u.txt", j0) == "/w/out-70-sim-ana.txt"
    assert jobs.output_of("/w/100%%-%J.log", j0) == "/w/100%-70.log"
    assert jobs.output_of("/w/slurm-70.out", j0) == "/w/slurm-70.out"

"""Elastic Job Bundling on the local cluster: ejb-submit, the EJB manager and its pilots, real ranks.

``ejb demo``'s scenario: a rigid background job holds 4 of the 8 nodes for a minute; a 6-node FS
job would wait for it. Through ejb-submit it starts at once in a subjob on the 2 nodes nobody is
planned on (three ranks per CPU), moves to J0 (or into a better subjob) when the background job
ends, and prints the result the same job prints under plain sbatch. The other tests use a 4-node
job behind 6 busy nodes (``scenario.Shape()``, the benchmark's).
"""

from __future__ import annotations

import getpass
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ejb.live import jobs, scenario
from ejb.live.client import request
from slurm_ext.protocol import free_port
from tests.e2e.conftest import idle_nodes, sh
from tests.users import CLIENT

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]
LEFTOVER_NAMES = ("rigid-background", "job.sh", "job-ejb.sh", "job-sbatch.sh", "wrapped")


def plain_result(tmp: Path, conf: Path, shape: scenario.Shape) -> dict:
    """The same job without any background load, under sbatch (a few steps: the result does not
    depend on the number of steps)."""
    out = scenario.run_once("sbatch", replace(shape, steps=4), tmp / "plain", conf, with_background=False)
    assert out.result is not None
    return out.result


def ejb_jobs(job: int, conf: Path) -> list[str]:
    """Every job EJB ever ran for ``job``, from accounting: J0 and the subjobs."""
    out = sh("sacct", "-X", "-n", "-P", "-o", "JobID,JobName", "-S", "now-1hour", conf=conf)
    return [ln for ln in out.splitlines() if ln.startswith(f"{job}|") or f"|ejb{job}." in ln]


def background(conf: Path, seconds: int = 60) -> int:
    """The scenario's rigid 6-node job, on the first 6 nodes and running: the 2 nodes left are the
    last two, where no job waiting behind it is planned. (Unpinned, Slurm may place it around a
    node still completing the previous test's job and leave free the nodes the bundled job's J0
    is planned on: no slot for a subjob, as CI once saw.)"""
    slurm = scenario.slurm_of(conf)
    job = scenario.background(scenario.Shape(background_seconds=seconds, pin_background=True), slurm)
    scenario.wait_for(lambda: slurm.job_state(job)[0] == "RUNNING", 60, 0.2)
    return job


class Supervised:
    """An EJB manager that is restarted whenever it dies; each start may get a crash point.
    ``restart_delay``: a slow restart, long enough for a subjob submitted just before the crash to
    start (on this cluster it takes a second or two) and its pilot to find nobody."""

    def __init__(
        self,
        tmp: Path,
        conf: Path,
        crashes: list[str],
        restart_delay: float = 0.0,
        args: tuple[str, ...] = (),
    ) -> None:
        self.tmp, self.conf, self.crashes, self.args = tmp, conf, list(crashes), args
        self.restart_delay = restart_delay
        self.port, self.service_port = free_port(), free_port()
        self.starts = 0
        self.proc = self._start()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self) -> subprocess.Popen[bytes]:
        crash = self.crashes.pop(0) if self.crashes else None
        self.starts += 1
        return scenario.start_manager(self.tmp / "state", self.tmp / "manager.log", self.port,
                                      self.service_port, self.conf, *self.args, crash_at=crash)  # fmt: skip

    def _watch(self) -> None:
        while not self.stopping.wait(0.2):
            if self.proc.poll() is not None:
                if self.stopping.wait(self.restart_delay):
                    return
                self.proc = self._start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        scenario.stop_manager(self.proc)


@pytest.fixture
def conf(slurm) -> Iterator[Path]:  # noqa: ANN001 -- slurm: every node idle before
    from slurm_ext.config import load_config

    path = load_config().cluster.slurm_conf
    yield path
    # whatever a failed test left: the background job, the bundled jobs and their subjobs
    for job, name, _ in scenario.queue(scenario.slurm_of(path)):
        if name in LEFTOVER_NAMES or name.startswith("ejb"):
            sh("scancel", str(job), check=False, conf=path)


def test_ejb_demo_a_6_node_job_starts_now_in_a_subjob_moves_and_prints_sbatchs_result(conf, tmp_path):
    expected = plain_result(tmp_path, conf, scenario.WIDE)
    demo = subprocess.run(["ejb", "demo", "--json", "--workdir", str(tmp_path / "demo")], capture_output=True,
                          text=True, env=scenario.env_for(conf), timeout=600)  # fmt: skip
    log = (tmp_path / "demo" / "manager.log").read_text(errors="replace")[-3000:]
    assert demo.returncode == 0, (demo.stderr[-2000:], log)
    out = json.loads(demo.stdout)
    assert out["ok"] and out["leftover_jobs"] == []
    assert out["result"]["checksum_ok"] and out["result"]["checksum"] == expected["checksum"]
    assert out["result"]["final_size"] == 12  # 6 nodes x 2 ranks
    why = f"waited {out['wait']:.0f} s: the subjob should start at once (sbatch: 60 s)"
    assert out["wait"] < 30, f"{why}\n{log}"
    assert "Traceback" not in log, log
    status = out["status"]
    assert status["phase"] == "done" and status["migrations"] >= 1
    # when the background job ends, J0 starts (everything moves to J0), or a subjob on the freed
    # nodes starts first: the ranks move into it (a better slot), and J0 is cancelled when the
    # application ends or, if it starts meanwhile, kept out (EJB-sched keeps the subjobs, section 3.3)
    events = [what for _, what in status["events"]]
    to_j0 = any("migrate all processes to J0" in what for what in events)
    better = any(re.match(r"migrate-dest: ranks to subjob\(s\) \[[1-9]", what) for what in events)
    assert to_j0 or better, events
    resizes = [r[1] for r in out["result"]["resizes"]]
    assert resizes[:1] == ["expand"]  # ranks joined J0 or the better slot
    if to_j0:
        assert resizes[:2] == ["expand", "shrink"]  # into J0, then out of the subjob (rank 0 moved too)
    assert out["turnaround"] < 60 + 40, f"turnaround {out['turnaround']:.0f} s: no better than sbatch"
    scenario.wait_for(lambda: idle_nodes() == 8, 30, 0.5)  # every node back


def test_a_scenario_run_that_ejb_would_not_bundle_submits_nothing_and_says_why(conf, tmp_path):
    # No background job: the job would start now anyway, so EJB would leave it to sbatch, and a
    # demo of EJB could show nothing: ejb-submit --ejb-require submits nothing and the run says why
    # (before: an IndexError once the job ended).
    before = scenario.queue(scenario.slurm_of(conf))
    said = r"nothing was submitted \(ejb-submit: .*it starts now anyway"
    with pytest.raises(scenario.NotBundled, match=said):
        scenario.run_once("ejb", scenario.WIDE, tmp_path, conf, "127.0.0.1:9", with_background=False)
    assert scenario.queue(scenario.slurm_of(conf)) == before


def test_the_job_completes_when_the_manager_is_killed_after_a_submission_and_during_a_migration(
    conf, tmp_path
):
    # first start: killed right after sbatch returned a subjob's id; second: killed once J0's groups
    # joined (the application never hears the answer to its commit); third: runs to the end. Each
    # restart takes 5 s: the subjob starts while nobody listens, and its pilot must wait to be adopted
    # (before the pilot waited, it ended at once and the restarted manager dropped the subjob)
    manager = Supervised(tmp_path, conf, ["ejb-submitted", "ejb-joined"], restart_delay=5.0)
    try:
        out = scenario.run_once("ejb", scenario.Shape(), tmp_path / "ejb", conf, manager.address)
    finally:
        manager.stop()
    log = (tmp_path / "manager.log").read_text()
    assert manager.starts == 3, log[-3000:]
    assert out.result is not None and out.result["checksum_ok"], log[-3000:]
    status = out.status
    assert status is not None and status["phase"] == "done", log[-3000:]
    assert any("adopted subjob" in what for _, what in status["events"]), (status["events"], log[-3000:])
    # nothing duplicated: every subjob Slurm ran is one the manager knows, each under its own name
    # (a second subjob on the nodes the background job frees is a decision, not a duplicate)
    ran = [j.split("|") for j in ejb_jobs(out.job, conf) if "|ejb" in j]
    known = {int(s["job_id"]) for key, s in status["subjobs"].items() if key != "0" and s["job_id"]}
    assert ran and {int(job) for job, _ in ran} == known, (ran, status["subjobs"])
    assert len({name for _, name in ran}) == len(ran), ran
    assert scenario.leftover(scenario.slurm_of(conf), out.job) == []


def test_a_manager_that_uses_spares_releases_one_again_after_a_crash_refills_them_and_leaves_no_job(
    conf, tmp_path
):
    # A manager that may not submit as the job's owner (an Operator, not root; here forced with
    # --spares) starts subjobs from the held spares ejb-submit queued as the owner: it reshapes,
    # renames and releases one. Killed right after the release, it finds at its restart the
    # subjob whose release it had not recorded and keeps it. Its one spare used, it asks that
    # subjob's pilot (the owner's process) for another; the application runs to its end and the
    # spare it never used is cancelled with the job.
    manager = Supervised(tmp_path, conf, ["ejb-submitted"], restart_delay=5.0, args=("--spares", "1"))
    try:
        out = scenario.run_once("ejb", scenario.Shape(), tmp_path / "ejb", conf, manager.address)
    finally:
        manager.stop()
    log = (tmp_path / "manager.log").read_text()
    assert manager.starts == 2, log[-3000:]
    assert out.result is not None and out.result["checksum_ok"], log[-3000:]
    status = out.status
    assert status is not None and status["phase"] == "done", log[-3000:]
    events = [what for _, what in status["events"]]
    queued = {int(m[1]): int(m[2]) for what in events if (m := re.match(r"spare (\d+) = job (\d+)$", what))}
    assert set(queued) >= {0, 1}, events  # ejb-submit's spare 0, then spare 1 queued by a pilot
    asked = [
        m[1] for what in events if (m := re.match(r"asked the pilot of subjob (\d+) .* spare\(s\) 1$", what))
    ]
    assert asked and f"spare 1 queued as job {queued[1]} by the pilot of subjob {asked[0]}" in events, events
    assert any("(after a restart)" in what and what.startswith("released spare") for what in events), events
    # every subjob was a spare; those left over went with the job
    subjobs = {int(s["job_id"]) for key, s in status["subjobs"].items() if key != "0" and s["job_id"]}
    assert subjobs and subjobs <= set(queued.values()), (subjobs, queued)
    assert all(s["spare"] is not None for key, s in status["subjobs"].items() if key != "0")
    ran = {int(j.split("|")[0]) for j in ejb_jobs(out.job, conf) if "|ejb" in j}
    assert ran == subjobs, (ran, subjobs)  # under their subjob names
    assert status["spares"] == {}
    cancelled = [what for what in events if what.startswith("cancelled spare")]
    assert len(cancelled) == len(set(cancelled)), cancelled  # each spare once, however long it lingers
    assert scenario.leftover(scenario.slurm_of(conf), out.job) == []


def test_ejb_cancel_takes_j0_and_the_subjobs_and_only_for_their_owner(conf, tmp_path, other_user):
    manager = Supervised(tmp_path, conf, [])
    env = {**scenario.env_for(conf), "EJB_MANAGER": manager.address}
    try:
        bg = background(conf)
        script = tmp_path / "job.sh"
        script.write_text(scenario.Shape(steps=400).script())
        submit = ["ejb-submit", "-o", str(tmp_path / "out-%j.out"), str(script)]
        res = subprocess.run(submit, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
        assert res.returncode == 0, res.stderr
        job = int(res.stdout.split()[-1])
        assert f"job {job} bundled" in res.stderr

        def hosting() -> list[dict]:
            app = request(manager.address, {"op": "status", "eid": job})["apps"][0]
            return [s for s in app["subjobs"].values() if s["members"]]

        assert scenario.wait_for(hosting, 60)
        # another user is told no, and nothing changes
        line = json.dumps({"op": "cancel", "eid": job}) + "\n"
        client = ["/usr/bin/python3", "-c", CLIENT, "127.0.0.1", str(manager.port), line]
        other = subprocess.run(["runuser", "-u", other_user, "--", *client], capture_output=True, text=True,
                               timeout=30, cwd="/")  # fmt: skip
        assert "permission denied" in other.stdout
        assert len(scenario.leftover(scenario.slurm_of(conf), job)) == 2  # J0 pending, the subjob running
        res = subprocess.run(["ejb", "cancel", str(job)], capture_output=True, text=True, env=env, timeout=60)
        assert res.returncode == 0 and f"cancelled job {job}" in res.stdout, res.stderr
        scenario.wait_for(lambda: not scenario.leftover(scenario.slurm_of(conf), job), 30, 0.5)
        assert any(j == bg for j, _, _ in scenario.queue(scenario.slurm_of(conf)))  # not EJB's: untouched
    finally:
        manager.stop()
        sh("scancel", "-n", "rigid-background", check=False, conf=conf)


def test_ejb_submit_with_the_manager_up_bundles_dmr_jobs_and_passes_the_rest_to_sbatch(conf, tmp_path):
    manager = Supervised(tmp_path, conf, [])
    env = {**scenario.env_for(conf), "EJB_MANAGER": manager.address}

    def submit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ejb-submit", *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=60)  # fmt: skip

    try:
        background(conf)

        def jobs() -> list[tuple[int, str]]:  # ids and names: the background job may start meanwhile
            return [(j, name) for j, name, _ in scenario.queue(scenario.slurm_of(conf))]

        before = jobs()
        bad = submit("-N", "4", "--no-such-option", "--wrap", "dmr-run -- true")
        assert bad.returncode != 0 and "unrecognized option" in bad.stderr
        assert jobs() == before  # sbatch's error, nothing submitted
        plain = submit("-N", "4", "--ntasks-per-node", "2", "-o", "/dev/null", "--wrap", "sleep 5")
        assert plain.returncode == 0 and "submitted with plain sbatch" in plain.stderr
        assert "does not run its application with dmr" in plain.stderr
        sh("scancel", plain.stdout.split()[-1], conf=conf)  # it waits ahead of the next one otherwise
        work = tmp_path / "work"
        work.mkdir()
        fs = f"{scenario.FS} --steps 400 --step-seconds 8 --min 1 --max 64"
        res = submit("--parsable", "-N", "4", "--ntasks-per-node=2", "-t", "5", "-J", "wrapped", "-p",
                     "debug", "-D", str(work), "-o", "out-%j.txt", "--export=ALL,EJB_TEST=1", "--ejb-o-max",
                     "2", "--wrap", f"dmr-run -- {sys.executable} {fs}")  # fmt: skip
        assert res.returncode == 0, res.stderr
        job = int(res.stdout.strip())
        app = request(manager.address, {"op": "status", "eid": job})["apps"][0]
        assert app["o_max"] == 2 and app["output"] == str(work / f"out-{job}.txt")
        assert "env" not in app and all("secret" not in sub for sub in app["subjobs"].values())  # public

        def subjob() -> tuple[str, dict] | None:
            subs = request(manager.address, {"op": "status", "eid": job})["apps"][0]["subjobs"]
            return next(((k, s) for k, s in subs.items() if k != "0" and s["members"]), None)

        key, sub = scenario.wait_for(subjob, 60, 0.5)  # a slot sbatch --test-only refused is tried anew
        shown = sh("scontrol", "show", "job", "-o", str(sub["job_id"]), conf=conf)
        assert f"JobName=ejb{job}.{key}" in shown and "Partition=debug" in shown
        assert f"WorkDir={work}" in shown
        assert f"StdOut={work}/out-{job}.txt" in shown  # the user reads one file
        app = request(manager.address, {"op": "status", "eid": job})["apps"][0]
        assert app["phase"] == "running" and app["subjobs"]["0"]["state"] == "pending"  # J0 keeps its place
        # what the user types to see it: a table, or one JSON object
        cli = [sys.executable, "-m", "ejb", "status", str(job), "--manager", manager.address]
        table = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=30)
        assert table.returncode == 0 and str(job) in table.stdout and "running" in table.stdout, table
        assert (
            f"{job}  submitted as: ejb-submit --parsable -N 4 --ntasks-per-node=2 -t 5 -J wrapped"
            in table.stdout
        )
        shown_json = subprocess.run([*cli, "--json"], capture_output=True, text=True, env=env, timeout=30)
        assert json.loads(shown_json.stdout)["apps"][0]["eid"] == job
    finally:
        manager.stop()


def test_with_the_manager_up_an_array_leaves_its_tasks_alone_and_a_dependency_no_subjob_before_it(
    conf, tmp_path
):
    # 2 of 8 nodes free: a slot EJB would fill with a subjob of a plain dmr job. An array and a
    # job waiting on a dependency go to sbatch as typed, saying why, and get no subjob.
    manager = Supervised(tmp_path, conf, [])
    env = {**scenario.env_for(conf), "EJB_MANAGER": manager.address}
    fs = f"dmr-run -- {sys.executable} {scenario.FS} --steps 5 --min 1 --max 64"

    def submit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ejb-submit", "-N", "4", "--ntasks-per-node=2", "-o", "/dev/null", *args,
                               "--wrap", fs], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=60)  # fmt: skip

    ids: list[str] = []
    try:
        blocker = background(conf)
        array = submit("--array=1-3%2")
        ids += array.stdout.split()[-1:]
        assert array.returncode == 0 and "a job array" in array.stderr, array.stderr
        waiting = submit(f"--dependency=afterok:{blocker}")
        ids += waiting.stdout.split()[-1:]
        assert waiting.returncode == 0 and "a dependency" in waiting.stderr, waiting.stderr
        array_id, waiting_id = int(ids[0]), int(ids[1])
        time.sleep(5)  # the manager's probes run meanwhile: nothing of these two may be bundled
        out = sh("squeue", "-h", "-r", "-o", "%i %j %r", conf=conf).splitlines()
        assert sorted(ln.split()[0] for ln in out if ln.startswith(f"{array_id}_")) == [
            f"{array_id}_{i}" for i in (1, 2, 3)
        ], out
        assert not [ln for ln in out if " ejb" in ln], out  # no subjob for either
        assert any(ln.startswith(f"{waiting_id} ") and ln.endswith("Dependency") for ln in out), out
        assert request(manager.address, {"op": "status"})["apps"] == []
    finally:
        manager.stop()
        if ids:  # named "wrap": not among the names the fixture cancels
            sh("scancel", *ids, check=False, conf=conf)


def test_when_j0_starts_early_and_a_migration_costs_more_than_the_progress_the_job_restarts_on_j0(
    conf, tmp_path
):
    # lambda = 200 s (an #EJB line): J0 starts a few seconds after the application started on its
    # subjob, so little is done; starting over on J0 completes earlier than moving there (EJB-sched's
    # choice, section 3.3). The background job is cancelled once the subjob runs the application,
    # so the order of events does not depend on how fast Slurm starts jobs.
    shape = scenario.Shape(background_seconds=300, ejb="--migration 200")
    manager = Supervised(tmp_path, conf, [])

    def end_background_once_launched(job: int) -> None:
        def launched() -> bool:
            app = request(manager.address, {"op": "status", "eid": job})["apps"]
            # a subjob, whichever (a slot sbatch --test-only refused makes the next one key 2)
            events = app[0]["events"] if app else []
            return any(re.match(r"launch on subjob [1-9]", what) for _, what in events)

        scenario.wait_for(launched, 120, 0.5)
        sh("scancel", "-n", "rigid-background", conf=conf)

    try:
        out = scenario.run_once("ejb", shape, tmp_path / "ejb", conf, manager.address,
                                during=end_background_once_launched)  # fmt: skip
    finally:
        manager.stop()
    status = out.status
    log = (tmp_path / "manager.log").read_text(errors="replace")[-4000:]
    assert status is not None and status["restarts"] == 1 and status["phase"] == "done", (status, log)
    assert any("restart the application on J0" in what for _, what in status["events"])
    assert out.result is not None and out.result["checksum_ok"]
    assert out.result["resizes"] == []  # the run that printed it ran on J0 from its first step
    assert scenario.leftover(scenario.slurm_of(conf), out.job) == []


def test_a_placeholder_that_starts_while_the_manager_is_away_waits_for_the_subjob_hosting_the_job(
    conf, tmp_path, monkeypatch
):
    # The application runs on a subjob; the manager dies and stays away for 25 s; meanwhile the
    # background job ends and J0 starts. After its first wait (5 s here, 60 s by default) J0 finds
    # the subjob running and keeps waiting instead of running a second copy by itself; the
    # restarted manager adopts both and the one copy completes.
    monkeypatch.setenv("DMR_PILOT_FIRST_WAIT", "5")  # J0 and the subjobs inherit it (--export=ALL)
    shape = scenario.Shape(background_seconds=300)
    manager = Supervised(tmp_path, conf, [], restart_delay=25.0)

    def kill_manager_once_running(job: int) -> None:
        def running() -> bool:  # the application reported progress from its subjob: it is up
            app = request(manager.address, {"op": "status", "eid": job})["apps"]
            return bool(app) and bool(app[0]["progress"])

        scenario.wait_for(running, 120, 0.5)
        manager.proc.kill()
        sh("scancel", "-n", "rigid-background", conf=conf)

    try:
        out = scenario.run_once("ejb", shape, tmp_path / "ejb", conf, manager.address,
                                during=kill_manager_once_running)  # fmt: skip
    finally:
        manager.stop()
    log = (tmp_path / "manager.log").read_text(errors="replace")[-4000:]
    text = (tmp_path / "ejb" / f"ejb-{out.job}.out").read_text(errors="replace")
    assert manager.starts == 2, log
    assert "waiting for the manager instead of starting a second copy" in text, text[-3000:]
    assert "running the job by itself" not in text, text[-3000:]
    assert text.count("FS_RESULT ") == 1, text[-3000:]  # one copy of the application, one result
    assert out.result is not None and out.result["checksum_ok"], (text[-3000:], log)
    status = out.status
    assert status is not None and status["phase"] == "done", (status, log)
    assert scenario.leftover(scenario.slurm_of(conf), out.job) == []


def test_the_job_completes_when_the_manager_is_killed_as_the_application_launches(conf, tmp_path):
    # Killed right after the launch order went out, before the manager saved it: the groups start
    # while nobody hosts their agent (the manager does), and the restarted manager's record still
    # says the launch is due. The groups keep trying the agent's port until it is back (before,
    # rank 0 failed at once, the other ranks hung until the time limit); the pilot says its groups
    # run, so the manager does not launch a second copy.
    manager = Supervised(tmp_path, conf, ["ejb-launched"], restart_delay=5.0)
    try:
        out = scenario.run_once("ejb", scenario.Shape(), tmp_path / "ejb", conf, manager.address)
    finally:
        manager.stop()
    log = (tmp_path / "manager.log").read_text(errors="replace")[-4000:]
    text = (tmp_path / "ejb" / f"ejb-{out.job}.out").read_text(errors="replace")
    assert manager.starts == 2, log
    assert text.count("FS_RESULT ") == 1, text[-3000:]
    assert out.result is not None and out.result["checksum_ok"], (text[-3000:], log)
    status = out.status
    assert status is not None and status["phase"] == "done", (status, log)
    events = [what for _, what in status["events"]]
    # the one launch's own event died with the manager (not saved); none came after the restart
    assert not any(what.startswith("launch on subjob") for what in events), events
    assert any("launched before the manager restarted" in what for what in events), events
    assert scenario.leftover(scenario.slurm_of(conf), out.job) == []


def computing_in_a_subjob(manager: Supervised, conf: Path, tmp_path: Path) -> tuple[int, int, dict]:
    """A job bundled with a background job holding part of the cluster: (its id, the subjob that
    hosts its 8 ranks, those ranks), a few seconds into its computation."""
    import time

    from slurm_ext.bench.faults import app_ranks

    env = {**scenario.env_for(conf), "EJB_MANAGER": manager.address}
    background(conf)
    fs = f"{scenario.FS} --steps 400 --step-seconds 2 --min 1 --max 64"
    res = subprocess.run(["ejb-submit", "--parsable", "-N", "4", "--ntasks-per-node=2", "-t", "5", "-J",
                          "wrapped", "-o", str(tmp_path / "out-%j.txt"), "--wrap",
                          f"dmr-run -- {sys.executable} {fs}"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)  # fmt: skip
    assert res.returncode == 0, res.stderr
    job = int(res.stdout.strip())

    def hosting() -> int | None:
        subs = app_status(manager, job)["subjobs"]
        return next((s["job_id"] for k, s in subs.items() if k != "0" and s["members"]), None)

    sub_job = scenario.wait_for(hosting, 90, 0.5)
    ranks = scenario.wait_for(lambda: len(app_ranks(sub_job)) == 8 and app_ranks(sub_job), 60, 0.5)
    time.sleep(3)  # computing, past MPI_Init
    return job, sub_job, ranks


def app_status(manager: Supervised, job: int) -> dict:
    return request(manager.address, {"op": "status", "eid": job})["apps"][0]


def test_a_rank_killed_in_a_subjob_ends_the_bundled_job_everywhere_within_seconds(conf, tmp_path):
    """The pilot reports its failed group at once; the manager ends the application: its groups,
    its subjobs and its placeholder go, and nothing waits for the time limit."""
    import os
    import signal
    import time

    from slurm_ext.bench.faults import app_ranks

    manager = Supervised(tmp_path, conf, [])
    try:
        job, sub_job, ranks = computing_in_a_subjob(manager, conf, tmp_path)
        t0 = time.monotonic()
        os.kill(min(ranks), signal.SIGKILL)
        scenario.wait_for(lambda: app_status(manager, job)["phase"] == "failed", 30, 0.2)
        failed_after = time.monotonic() - t0
        assert failed_after < 15, failed_after
        assert "cannot go on" in json.dumps(app_status(manager, job)), app_status(manager, job)
        scenario.wait_for(lambda: not ejb_jobs_running(job, conf) and not app_ranks(sub_job), 60, 0.5)
    finally:
        manager.stop()


def ejb_jobs_running(job: int, conf: Path) -> list[str]:
    """J0 and the subjobs of ``job`` still in the queue."""
    out = sh("squeue", "-h", "-o", "%i %j", conf=conf)
    return [ln for ln in out.splitlines() if ln.split()[0] == str(job) or f" ejb{job}." in ln]


def test_a_rank_killed_while_the_manager_is_away_ends_the_bundled_job_once_it_is_back(conf, tmp_path):
    """Manager killed, then a rank: the pilot cannot report, so it stops its own groups after the
    grace; the restarted manager finds the failure the pilot kept for it and ends the job everywhere
    (no second copy started from nothing, nothing left in the queue)."""
    import os
    import signal
    import time

    from slurm_ext.bench.faults import app_ranks

    manager = Supervised(tmp_path, conf, [], restart_delay=15.0)
    try:
        job, sub_job, ranks = computing_in_a_subjob(manager, conf, tmp_path)
        manager.proc.kill()
        t0 = time.monotonic()
        os.kill(min(ranks), signal.SIGKILL)
        # the pilot stops its groups after the grace by itself, manager or not
        scenario.wait_for(lambda: not app_ranks(sub_job), 30, 0.2)
        assert time.monotonic() - t0 < 20

        def phase() -> str | None:  # None while the manager restarts
            try:
                return app_status(manager, job)["phase"]
            except OSError:
                return None

        scenario.wait_for(lambda: manager.starts == 2 and phase() == "failed", 60, 0.5)
        scenario.wait_for(lambda: not ejb_jobs_running(job, conf), 60, 0.5)
        log = (tmp_path / "manager.log").read_text(errors="replace")[-4000:]
        assert "cannot go on" in json.dumps(app_status(manager, job)), log
        out = tmp_path / f"out-{job}.txt"
        text = out.read_text(errors="replace") if out.exists() else ""
        assert "FS_RESULT " not in text, text[-3000:]
    finally:
        manager.stop()


# every rank says who it is on stdout and stderr, before the application could be resized
RANKS_APP = """\
import sys
import dmr

m = dmr.Malleable(1, 64)
print(f"rank {m.rank} of {m.size}", flush=True)
print(f"rank {m.rank} of {m.size} on stderr", file=sys.stderr, flush=True)
for _ in m.steps(2):
    pass
"""
OUT, ERR = "out-%j-%5j-%x-%u-%n-%t-%s-%a-%N-%%.txt", "err-%x.txt"  # sbatch knows every code here


def test_a_bundled_jobs_files_are_the_ones_sbatch_writes_j0s_id_in_their_names(conf, tmp_path):
    # The same 4-node job under sbatch (nothing in its way) and under ejb-submit (behind a
    # 6-node job: it runs in a subjob): its output file has J0's id where sbatch's has the job's
    # own, and the same lines; the error file, there before, is emptied as sbatch empties it,
    # unless the job asks for --open-mode=append
    manager = Supervised(tmp_path, conf, [])
    env = {**scenario.env_for(conf), "EJB_MANAGER": manager.address}
    script = tmp_path / "job.sh"
    (tmp_path / "ranks.py").write_text(RANKS_APP)
    script.write_text("#!/bin/bash\n#SBATCH -N 4\n#SBATCH --ntasks-per-node=2\n#SBATCH -t 5\n"
                      f"{sys.executable} -m dmr -- {sys.executable} {tmp_path / 'ranks.py'}\n")  # fmt: skip

    def run(how: list[str], where: Path, extra: dict[str, str]) -> tuple[int, str, str]:
        """(job id, output, error) of the job submitted by ``how`` in ``where``, once it is gone."""
        where.mkdir()
        (where / "err-job.sh.txt").write_text("a line from before\n")
        res = subprocess.run([*how, "--parsable", "-o", OUT, "-e", ERR, str(script)], capture_output=True,
                             text=True, env={**env, **extra}, cwd=where, timeout=60)  # fmt: skip
        assert res.returncode == 0, res.stderr
        job = int(res.stdout.strip().split(";")[0])
        scenario.wait_for(lambda: not scenario.leftover(scenario.slurm_of(conf), job), 300, 0.5)
        outs = sorted(where.glob("out-*"))
        assert len(outs) == 1, outs  # one file, whichever jobs the ranks ran in
        host = socket.gethostname().split(".")[0]  # every node of the local cluster is this machine
        facts = jobs.BatchFacts(job, "job.sh", getpass.getuser(), host)
        assert outs[0].name == jobs.expand_pattern(OUT, facts)
        return job, outs[0].read_text(), (where / "err-job.sh.txt").read_text()

    try:
        # no control service for the plain run: dmr's warning that it is unreachable is not the job's
        _, out, err = run(["sbatch"], tmp_path / "sbatch", {"PYTHONWARNINGS": "ignore::RuntimeWarning"})
        assert sorted(out.splitlines()) == [f"rank {r} of 8" for r in range(8)]
        assert sorted(err.splitlines()) == [f"rank {r} of 8 on stderr" for r in range(8)]  # truncated
        background(conf, 300)
        for mode, kept in (("truncate", []), ("append", ["a line from before"])):
            how = ["ejb-submit", "--ejb-require"] + (["--open-mode=append"] if mode == "append" else [])
            job, bundled_out, bundled_err = run(how, tmp_path / f"ejb-{mode}", {})
            app = request(manager.address, {"op": "status", "eid": job})["apps"][0]
            assert any(k != "0" and s["job_id"] for k, s in app["subjobs"].items())  # it ran in a subjob
            assert sorted(bundled_out.splitlines()) == sorted(out.splitlines())
            assert sorted(bundled_err.splitlines()) == sorted(kept + err.splitlines()), bundled_err
    finally:
        manager.stop()
        sh("scancel", "-n", "rigid-background", check=False, conf=conf)

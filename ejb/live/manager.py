"""The EJB manager on live Slurm (paper 004, section 4 and Figure 5).

It runs EJB-sched -- :class:`ejb.scheduler.EJBScheduler`, the same decision code the simulator
runs -- against the real queue, and carries its actions out with ordinary batch calls:

* **arrival** (``ejb-submit`` registers an application whose ``J0`` it submitted): the
  placeholder ``J0`` stays pending in the queue, in the job's place;
* **IdleJobSlotsAvailable** (every ``interval`` seconds): a showbf probe of the snapshot
  (:mod:`ejb.live.probe`) offers the immediately backfillable slots; a subjob of the shape
  EJB-sched picks is submitted only if ``sbatch --test-only`` agrees that it starts now;
* **SubjobStart** (a job seen running): its pilot (``dmr-run`` in pilot mode, the EJB worker)
  is told what to do -- the *operation queue*: ``launch`` the application (first start,
  or restart on ``J0``) or ``migrate-dest`` (start groups that join the running application,
  which then lets the source subjob's groups leave);
* **TargetAppComplete** (every group of the application ended): whatever EJB still has in
  the queue is cancelled.

Migration is an expansion into the destination followed by a shrink out of the source, carried
out by the application's own DMR runtime at its next check: the manager answers the
application's checks (the DMR protocol; the application's ``DMR_SERVICE`` is the manager) and
hosts its rendezvous agent (:class:`dmr.agent.Agent`), since no subjob lives as long as the
application. Every decision is logged with its reason; the state is saved after every change
(:mod:`ejb.live.records`).
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dmr.agent import Agent, serve
from dmr.launch import SPARE_NAME, SUBJOB_NAME, LaunchSpec, spare_name, subjob_name
from ejb.actions import Action, CancelSubjob, Migrate, SubmitSubjob
from ejb.live import jobs
from ejb.live.backend import EJBBackend
from ejb.live.probe import Probe
from ejb.live.records import AppRecord, Migration, Store, SubjobRecord
from ejb.model import ElasticState, Target
from ejb.params import EJBParams
from ejb.scheduler import J0_KEY, EJBScheduler
from ejb.slots import Slots
from slurm_ext import protocol as p
from slurm_ext.faults import crash_point
from slurm_ext.model import Job, JobState, Snapshot
from slurm_ext.service.auth import Peer, may_act
from slurm_ext.service.watcher import SnapshotCache
from slurm_ext.slurm.parse import expand_nodes

log = logging.getLogger("ejb.manager")

STALE_AFTER = 15.0  # a subjob still pending this long after its submission lost its slot
ACK_TIMEOUT = 30.0
EXPAND_TRIES = 3
END_GRACE = 30.0  # seconds a subjob told to exit may take before it is cancelled
PLAN_WAIT = 60.0  # longest wait for a backfill pass to plan a new J0 (a site's bf_interval is 30 s)
SPARES = 4  # held subjobs ejb-submit queues for each job when the manager cannot submit as its owner
REFILLS = 4  # an application's spares in all (a pool filled again by its pilots), as a multiple of SPARES
SPARE_WAIT = 60.0  # seconds a spare asked for counts as on its way to the queue


@dataclass(frozen=True)
class PolicyName:
    name: str = "ejb"


@dataclass
class PilotLink:
    """The connection to one job's pilot: orders go out on it."""

    sock: socket.socket
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, order: dict[str, Any]) -> bool:
        import json

        with self.lock:
            try:
                self.sock.sendall((json.dumps(order) + "\n").encode())
                return True
            except OSError:
                return False


class Manager:
    """State and decisions; :mod:`ejb.live.control` and the DMR protocol server call into it."""

    policy = PolicyName()

    def __init__(
        self,
        backend: EJBBackend,
        state_dir: Path,
        params: EJBParams,
        pilot_address: str,
        service_address: str,
        interval: float = 1.0,
        spares: int | None = None,
    ) -> None:
        """``spares``: how many held subjobs ejb-submit queues for each job, for the manager to
        reshape and release instead of submitting subjobs itself; default none when the manager
        is root (it submits as the job's owner), else :data:`SPARES` (an Operator cannot)."""
        self.backend = backend
        self.spares = spares if spares is not None else (0 if os.geteuid() == 0 else SPARES)
        self.cache = SnapshotCache(backend, interval)
        self.interval = interval
        self.params = params
        self.pilot_address = pilot_address  # host:port the pilots reach the manager at
        self.service_address = service_address  # host:port the applications' checks go to
        self.store = Store(state_dir)
        self.apps, sched = self.store.load()
        self.ejb = sched or EJBScheduler(params, stale_after=STALE_AFTER)
        self.lock = threading.RLock()
        self.pilots: dict[tuple[int, int], PilotLink] = {}
        self.agents: dict[int, tuple[Agent, Any]] = {}
        self.acks: dict[tuple[int, str], set[int]] = {}
        self.ack_cond = threading.Condition()
        self.probe = Probe(self.cache, backend)
        self.cancelled_spares: set[int] = set()  # spares of ended jobs cancelled (they may linger a pass)
        self.counters: dict[str, int] = {"check": 0, "expand": 0, "shrink": 0, "none": 0, "submitted": 0}
        for app in self.apps.values():
            if app.phase in ("waiting", "running"):
                self._agent(app)

    # -- the application's rendezvous ------------------------------------------------------------
    def _agent(self, app: AppRecord) -> Agent:
        """The agent new groups of ``app`` say hello to (same port and key after a restart)."""
        if app.eid in self.agents:
            return self.agents[app.eid][0]
        agent = Agent(LaunchSpec(argv=[], cwd="/"), None, key=app.agent_key or None)
        server = serve(agent, port=app.agent_port)
        app.agent_port, app.agent_key = server.server_address[1], agent.key
        self.agents[app.eid] = (agent, server)
        return agent

    def _drop_agent(self, eid: int) -> None:
        found = self.agents.pop(eid, None)
        if found is not None:
            found[0].stop_all()
            found[1].shutdown()
            found[1].server_close()

    def _launch_env(self, app: AppRecord) -> dict[str, str]:
        return {
            "DMR_AGENT": self._agent(app).address_text,
            "DMR_APP_ID": str(app.eid),
            "DMR_SERVICE": self.service_address,
            "DMR_LAUNCH_TIMEOUT": "120",
        }

    def _ppn(self, app: AppRecord, nodes_after: int) -> int:
        """Ranks per node: the job's tasks per node times the over-subscription degree the
        application's P nodes of work need on ``nodes_after`` nodes (at most O_max)."""
        degree = min(app.o_max, max(1, math.ceil(app.nodes / max(1, nodes_after))))
        return app.ppn * degree

    # -- users: register, status, cancel ---------------------------------------------------------
    def register(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        eid = int(req["j0"])
        snap = self.cache.fresh()
        job = snap.job(eid)
        if job is None:
            return {"ok": False, "error": f"job {eid} is not in the queue"}
        if not may_act(peer, job.user):
            return {"ok": False, "error": f"permission denied: job {eid} belongs to {job.user}"}
        with self.lock:
            if eid in self.apps:
                return {"ok": False, "error": f"job {eid} is already bundled"}
            uid = peer.uid if peer.uid is not None else -1
            app = AppRecord(
                eid=eid, owner=job.user, uid=uid, options=_options(req["options"]),
                script=[str(w) for w in req["script"]], cwd=str(req["cwd"]),
                env={str(k): str(v) for k, v in req.get("env", {}).items()},
                ppn=max(1, int(req.get("ppn", 1))),
                o_max=int(req.get("o_max") or self.params.o_max),
                migration_cost=float(req.get("migration") or self.params.migration),
                command=str(req.get("command", "")),
                nodes=job.node_count, limit=float(job.time_limit or 3600.0), partition=job.partition,
                submitted=time.time(), spare_secrets=[str(x) for x in req.get("spares", [])][: self.spares],
            )  # fmt: skip
            app.spares_asked = {index: app.submitted for index in range(len(app.spare_secrets))}
            emptied = self._files(app, job, snap, req.get("files"))
            app.subjobs[J0_KEY] = SubjobRecord(J0_KEY, eid, job.node_count, app.limit, str(req["secret"]))
            self.apps[eid] = app
            self._agent(app)
            now = time.time()
            params = replace(self.params, o_max=app.o_max, migration=app.migration_cost)
            for act in self.ejb.arrive(eid, Target(app.nodes, app.limit), now, params):
                if isinstance(act, SubmitSubjob) and act.placeholder:
                    self.ejb.bound(eid, act.key, eid, now)
            app.log(
                now, f"registered: J0={eid}, P={app.nodes} nodes, R={app.limit:.0f} s, J0 kept in the queue"
            )
            log.info("job %s: bundled (P=%s nodes, R=%.0f s, owner %s)", eid, app.nodes, app.limit, app.owner)
            self._save()
        reply: dict[str, Any] = {"ok": True, "eid": eid, "truncate": emptied}
        if app.spare_secrets:  # what ejb-submit queues as spares: held one-node subjobs, J0's limit and files
            reply["spare"] = {"limit": app.limit, "output": app.output, "error": app.error}
        return reply

    def _files(self, app: AppRecord, j0: Job, snap: Snapshot, files: dict[str, str] | None) -> list[str]:
        """The output and error files sbatch gives ``J0`` (``files``: the user's patterns, open
        mode and work directory, from ejb-submit); returns those ejb-submit is to empty, as sbatch
        does when a job starts unless it opens them for appending (J0 appends, as every job of the
        bundle then does). ``snap``: the snapshot ``j0`` was read from."""
        if not files:  # an older ejb-submit: Slurm's StdOut, the error file as the user asked
            app.output = jobs.output_of(self.backend.stdout_of(app.eid) or j0.stdout, j0)
            return []
        patterns = [files["output"], files.get("error") or ""]
        host = self._batch_host(app.eid, snap) if any(jobs.names_host(pat) for pat in patterns) else ""
        facts = jobs.BatchFacts(app.eid, j0.name, j0.user, host)
        app.output = jobs.batch_file(patterns[0], files["workdir"], facts)
        app.error = jobs.batch_file(patterns[1], files["workdir"], facts) if patterns[1] else ""
        if jobs.names_host(patterns[0]):  # J0 writes where its subjobs do, wherever it runs
            self.backend.set_stdout(app.eid, app.output)
        mode = files.get("open_mode") or ("append" if self.backend.job_file_append() else "truncate")
        if mode.lower().startswith("t") and j0.state is JobState.PENDING:  # nothing of J0 written yet
            return sorted({app.output, app.error} - {""})
        return []

    def _batch_host(self, eid: int, snap: Snapshot) -> str:
        """``%N`` of a job's batch step: its batch host's short name. A pending J0 has none yet: the
        first node Slurm plans it on, else the first of its partition(s) in ``snap``."""
        shown = self.backend.show_job(eid)
        planned = shown.get("SchedNodeList", "(null)")
        if planned in ("", "(null)"):
            planned = _first_node_of(snap, shown.get("Partition", ""))
        node = expand_nodes(planned)[0] if planned else ""
        address = self.backend.node_hostname(node)
        if address in ("localhost", "127.0.0.1"):  # a node on this very machine
            address = socket.gethostname()
        return address.split(".")[0]

    def describe(self, eid: int | None = None) -> dict[str, Any]:
        with self.lock:
            apps = [_public(a) for a in self.apps.values() if eid is None or a.eid == eid]
            return {"ok": True, "apps": apps, "probe": self.probe.summary()}

    def cancel(self, eid: int, peer: Peer) -> dict[str, Any]:
        with self.lock:
            app = self.apps.get(eid)
            if app is None:
                return {"ok": False, "error": f"job {eid} is not bundled by EJB"}
            if not may_act(peer, app.owner):
                return {"ok": False, "error": f"permission denied: job {eid} belongs to {app.owner}"}
            if app.phase not in ("waiting", "running"):
                return {"ok": True, "cancelled": []}
            cancelled = self._end(app, "cancelled", "cancelled by its owner (ejb cancel)")
        return {"ok": True, "cancelled": cancelled}

    # -- pilots ----------------------------------------------------------------------------------
    def pilot_hello(self, msg: dict[str, Any], sock: socket.socket) -> tuple[int, int] | dict[str, Any]:
        """A pilot says who it is; returns its (eid, key), or the order that ends the talk."""
        secret = str(msg.get("secret", ""))
        with self.lock:
            for app in self.apps.values():
                for sub in app.subjobs.values():
                    if secret and secrets.compare_digest(sub.secret, secret):
                        link = PilotLink(sock)
                        self.pilots[(app.eid, sub.key)] = link
                        sub.hosts = [str(n) for n in msg.get("nodes", [])] or sub.hosts
                        if app.phase not in ("waiting", "running") or sub.state == "gone":
                            return {"do": "exit"}
                        if msg.get("running"):
                            sub.members = True
                        log.info("job %s: pilot of subjob %s (job %s) connected on %s", app.eid, sub.key,
                                 sub.job_id, sub.hosts)  # fmt: skip
                        self._send_due(app)
                        return (app.eid, sub.key)
        # an unknown J0 (its registration failed): run as plain dmr-run; an unknown subjob: end
        return {"do": "plain"} if msg.get("role") == "j0" else {"do": "exit"}

    def pilot_gone(self, key: tuple[int, int], sock: socket.socket) -> None:
        with self.lock:
            link = self.pilots.get(key)
            if link is not None and link.sock is sock:
                del self.pilots[key]

    def pilot_ended(self, key: tuple[int, int], code: int) -> None:
        """Every group a pilot started has ended: ranks moved away, or the application is over."""
        eid, k = key
        with self.lock:
            app = self.apps.get(eid)
            if app is None:
                return
            sub = app.subjobs[k]
            sub.members = False
            if not sub.cancelled:  # ranks killed with a cancelled subjob did not fail the job
                app.exit_code = app.exit_code or code  # the first failure counts
            now = time.time()
            if sub.leaving or app.phase != "running":
                app.log(now, f"subjob {k} (job {sub.job_id}): its ranks left; the job ends")
                self._order(app, k, {"do": "exit"})
            if (
                app.phase == "running"
                and app.launch_key is None
                and not any(s.members for s in app.subjobs.values())
            ):
                code = app.exit_code or 0
                self._end(app, "done" if code == 0 else "failed", f"application ended (exit code {code})")
            self._save()

    def pilot_failed(self, key: tuple[int, int], code: int, why: str) -> None:
        """A group of the application failed (a rank died): its peers wait on it in MPI, in this
        subjob and in the others; the application ends everywhere, with that group's code."""
        eid, k = key
        with self.lock:
            app = self.apps.get(eid)
            if app is None or app.phase != "running":
                return
            sub = app.subjobs[k]
            if sub.cancelled or sub.leaving or not sub.members:
                return  # ranks killed on purpose, or ranks that were leaving anyway
            app.exit_code = app.exit_code or code
            self._end(app, "failed", f"{why} (subjob {k}): the application cannot go on")

    def pilot_spare(self, key: tuple[int, int], index: int, job: int | None, error: str) -> None:
        """What a pilot made of a spare it was asked to queue: a job (taken into the pool at the
        next pass, by its name) or sbatch's error (no more spares are asked for: a limit of the
        owner's, most likely, which more would only hit again)."""
        eid, k = key
        with self.lock:
            app = self.apps.get(eid)
            if app is None:
                return
            now = time.time()
            if job is not None:
                app.log(now, f"spare {index} queued as job {job} by the pilot of subjob {k}")
            else:
                app.spares_asked.pop(index, None)
                app.spares_refused = error or "unknown error"
                app.log(now, f"spare {index} not queued by the pilot of subjob {k} ({app.spares_refused}); "
                             "no more spares are asked for")  # fmt: skip
            self._save()

    def _refill_spares(self, app: AppRecord, now: float) -> bool:
        """The pool of spares filled again as subjobs use it up: the manager may not submit as
        the owner, but the pilot of a subjob that runs is the owner's, and queues them as
        ejb-submit did (``spares`` order). Up to ``--spares`` in the pool or on their way, and
        :data:`REFILLS` times that in all; none once a pilot's sbatch was refused."""
        if not self.spares or app.spares_refused or app.phase not in ("waiting", "running"):
            return False
        on_the_way = sum(1 for asked in app.spares_asked.values() if now - asked < SPARE_WAIT)
        in_all = self.spares * REFILLS - len(app.spare_secrets)
        missing = min(self.spares - len(app.spares) - on_the_way, in_all)
        subs = [app.subjobs.get(k) for (eid, k) in self.pilots if eid == app.eid and k != J0_KEY]
        running = [sub.key for sub in subs if sub is not None and sub.state == "running" and not sub.leaving]
        if missing <= 0 or not running:
            return False  # J0's pilot is not asked: once J0 runs, the application needs no subjob
        first = len(app.spare_secrets)
        indexes = range(first, first + missing)
        app.spare_secrets += [secrets.token_hex(12) for _ in indexes]
        app.spares_asked.update({index: now for index in indexes})
        self._save()  # written ahead: a spare queued while the manager restarts is taken by its index
        order = {"do": "spares", "spares": [self._spare_order(app, index) for index in indexes]}
        key = min(running)
        if not self._order(app, key, order):
            del app.spare_secrets[first:]
            for index in indexes:
                del app.spares_asked[index]
            return True
        app.log(now, f"asked the pilot of subjob {key} (job {app.subjobs[key].job_id}) to queue spare(s) "
                     f"{', '.join(map(str, indexes))}")  # fmt: skip
        return True

    def _spare_order(self, app: AppRecord, index: int) -> dict[str, Any]:
        argv = jobs.spare_argv(app.options, app.script, app.eid, index, app.limit, app.output, app.error)
        env = jobs.pilot_env(app.env, f"{self.pilot_address}:{app.spare_secrets[index]}:sub")
        return {"index": index, "argv": argv, "env": env, "cwd": app.cwd}

    def _order(self, app: AppRecord, key: int, order: dict[str, Any]) -> bool:
        link = self.pilots.get((app.eid, key))
        return link is not None and link.send(order)

    def _send_due(self, app: AppRecord) -> None:
        """Orders that waited for a pilot: the application's first launch (or its restart)."""
        key = app.launch_key
        if key is None or (app.eid, key) not in self.pilots:
            return
        sub = app.subjobs[key]
        if sub.state != "running" or not sub.hosts:
            return
        if sub.members:  # its pilot says groups run: launched before a restart, and not saved then
            app.launch_key = None
            app.log(time.time(), f"subjob {key} runs the application: launched before the manager restarted")
            return
        order = {
            "do": "launch",
            "token": "",
            "ppn": self._ppn(app, len(sub.hosts)),
            "env": self._launch_env(app),
        }
        if self._order(app, key, order):
            sub.members = True
            app.launch_key = None
            app.log(time.time(), f"launch on subjob {key} (job {sub.job_id}, {len(sub.hosts)} nodes, "
                    f"{order['ppn']} ranks per node)")  # fmt: skip
            log.info("job %s: launched on subjob %s (%s)", app.eid, key, sub.hosts)
            crash_point("ejb-launched")  # tests: the groups start while nobody hosts their agent
            self._save()

    # -- the periodic pass -----------------------------------------------------------------------
    def housekeeping(self) -> None:
        try:
            self.tick()
        except Exception:
            log.exception("EJB pass failed; next pass in %.0f s", self.interval)

    def repair(self) -> None:
        """After a restart: the loaded state is checked against the queue at the first pass."""

    def tick(self) -> None:
        with self.lock:
            now = time.time()
            busy = any(
                a.phase in ("waiting", "running") or (a.ended is not None and now - a.ended < 2 * END_GRACE)
                for a in self.apps.values()
            )
        if not busy:
            return  # nothing of EJB's in the queue: no need to ask Slurm
        snap = self.probe.run()
        with self.lock:
            now = time.time()
            changed = False
            for app in list(self.apps.values()):
                if app.phase in ("waiting", "running"):
                    changed |= self._follow(app, snap, now)
            changed |= self._sweep(snap, now)
            for app in list(self.apps.values()):
                changed |= self._refill_spares(app, now)
            changed |= self._offer_slots(now)
            for app in self.apps.values():
                if app.phase in ("waiting", "running"):
                    self._send_due(app)
            if changed:
                self._save()

    def _follow(self, app: AppRecord, snap: Snapshot, now: float) -> bool:
        """Subjob starts and ends seen in the queue become EJB-sched's events."""
        changed = False
        # J0 last: a subjob and J0 seen starting in one pass are, for EJB-sched, the subjob first
        # (J0's choice then counts the subjob's ranks)
        for sub in sorted(app.subjobs.values(), key=lambda s: s.key == J0_KEY):
            if sub.job_id is None or sub.state == "gone":
                continue
            job = snap.job(sub.job_id)
            if sub.cancelled and sub.state == "pending" and job is not None and job.state is JobState.RUNNING:
                self._cancel(app, sub)  # started while its cancellation was on its way
                continue
            if sub.state == "pending" and job is not None and job.state is JobState.RUNNING:
                sub.state, sub.hosts = "running", list(job.nodes)
                app.log(now, f"subjob {sub.key} (job {sub.job_id}) started on {sub.hosts}")
                self._started(app, sub, now)
                changed = True
            elif job is None or job.state not in (JobState.PENDING, JobState.RUNNING):
                sub.state, sub.ended_at = "gone", now
                if sub.members:  # its ranks were killed with it (time limit, scancel)
                    sub.members = False
                    app.log(now, f"subjob {sub.key} (job {sub.job_id}) ended with ranks of the application")
                else:
                    app.log(now, f"subjob {sub.key} (job {sub.job_id}) ended")
                self.pilots.pop((app.eid, sub.key), None)
                self._execute(app, self.ejb.ended(sub.job_id, now), now)
                changed = True
        if (
            app.phase == "running"
            and app.launch_key is None
            and not any(s.members for s in app.subjobs.values())
        ):
            self._end(app, "failed", "no subjob hosts the application any more")
            changed = True
        return changed

    def _sweep(self, snap: Snapshot, now: float) -> bool:
        """Jobs named as an application's subjob that EJB does not know: a job submitted just
        before a crash is adopted (its record was written ahead); anything else is cancelled."""
        changed = False
        for job in snap.jobs:
            m = SUBJOB_NAME.fullmatch(job.name)
            app = self.apps.get(int(m.group(1))) if m else None
            if m is None or app is None:
                continue
            sub = app.subjobs.get(int(m.group(2)))
            if sub is not None and sub.job_id is None and sub.state == "submitting":
                sub.job_id, sub.state = job.job_id, "pending"
                self.ejb.bound(app.eid, sub.key, job.job_id, now)
                app.log(now, f"adopted subjob {sub.key} = job {job.job_id} (submitted before a restart)")
                changed = True
            elif (
                sub is None
                or sub.job_id != job.job_id
                or (app.ended is not None and now - app.ended > END_GRACE)
            ):
                self.backend.cancel_quietly(job.job_id, job.name)
                app.log(now, f"cancelled job {job.job_id}: named as a subjob EJB does not have")
                changed = True
        for app in self.apps.values():  # written ahead, never submitted: nothing to adopt
            for key, sub in list(app.subjobs.items()):
                named = subjob_name(app.eid, key)
                if sub.state != "submitting" or sub.spare is not None:
                    continue
                if not any(j.name == named for j in snap.jobs):
                    del app.subjobs[key]
                    app.log(now, f"subjob {key}: no job {named} in the queue after a restart; dropped")
                    changed = True
        return self._sweep_spares(snap, now) or changed

    def _sweep_spares(self, snap: Snapshot, now: float) -> bool:
        """Spares ejb-submit queued are taken into their application's pool (their owner's, held,
        an index it registered); a spare of an application that ended is cancelled; one gone from
        the queue leaves the pool; a spare released just before a restart is released again."""
        changed = False
        for job in snap.jobs:
            m = SPARE_NAME.fullmatch(job.name)
            app = self.apps.get(int(m.group(1))) if m else None
            if m is None or app is None or job.user != app.owner:
                continue  # not EJB's, or another manager's: never touched
            index = int(m.group(2))
            if app.phase not in ("waiting", "running"):
                if job.job_id not in self.cancelled_spares:  # once: it may stay in the queue a while
                    self.backend.cancel_quietly(job.job_id, job.name)
                    self.cancelled_spares.add(job.job_id)
                    app.log(now, f"cancelled spare {index} (job {job.job_id}): the job has ended")
                    changed = True
            elif (
                job.state is JobState.PENDING
                and index < len(app.spare_secrets)
                and index not in app.spares
                and all(sub.spare != index for sub in app.subjobs.values())
            ):
                app.spares[index] = job.job_id
                app.spares_asked.pop(index, None)
                app.log(now, f"spare {index} = job {job.job_id}")
                changed = True
        self.cancelled_spares &= {job.job_id for job in snap.jobs}
        for app in self.apps.values():
            for index, job_id in list(app.spares.items()):
                held = snap.job(job_id)
                if held is None or held.state is not JobState.PENDING:  # cancelled, or released by hand
                    del app.spares[index]
                    app.log(now, f"spare {index} (job {job_id}) left the pool: "
                                 f"{held.state.value if held else 'gone from the queue'}")  # fmt: skip
                    changed = True
            for sub in list(app.subjobs.values()):
                if sub.state == "submitting" and sub.spare is not None and sub.job_id is not None:
                    changed |= self._release_again(app, sub, snap, now)
        return changed

    def _release_again(self, app: AppRecord, sub: SubjobRecord, snap: Snapshot, now: float) -> bool:
        """A subjob whose spare the manager was releasing when it stopped: released again if still
        held (the same update twice changes nothing), kept if released, dropped if gone."""
        assert sub.job_id is not None
        job = snap.job(sub.job_id)
        try:
            if job is None or job.state not in (JobState.PENDING, JobState.RUNNING):
                raise RuntimeError(f"job {sub.job_id} is {job.state.value if job else 'gone'}")
            if job.state is JobState.PENDING and job.reason.startswith("JobHeld"):
                self.backend.release_held(sub.job_id, sub.nodes, sub.limit, subjob_name(app.eid, sub.key))
        except RuntimeError as exc:
            del app.subjobs[sub.key]
            app.log(now, f"subjob {sub.key}: spare {sub.spare} not released after a restart ({exc}); dropped")
            return True
        sub.state = "pending"  # seen running at the next pass if it has started
        self.ejb.bound(app.eid, sub.key, sub.job_id, now)
        app.log(now, f"released spare {sub.spare} as subjob {sub.key} = job {sub.job_id} (after a restart)")
        return True

    def _started(self, app: AppRecord, sub: SubjobRecord, now: float) -> None:
        ej = self.ejb.jobs[app.eid]
        was_waiting = ej.state is ElasticState.WAIT
        restarts = ej.restarts
        actions = self.ejb.started(sub.job_id or 0, now)
        if was_waiting and ej.state is ElasticState.RUNNING:
            app.phase, app.launch_key = "running", sub.key
            app.log(now, f"launch: subjob {sub.key} is the first to start")
        self._execute(app, actions, now)
        if ej.restarts > restarts:  # restart on J0: the old ranks were cancelled with their subjobs
            app.restarts += 1
            app.exit_code = None  # the discarded run's ranks were killed; only the new run's count
            app.migration, app.queued = None, []
            self._drop_agent(app.eid)
            app.agent_port, app.agent_key = 0, ""
            app.launch_key = J0_KEY
            app.log(now, "J0 started: restart the application on J0 (earliest completion)")

    def _offer_slots(self, now: float) -> bool:
        """The slots of each application's partition(s), to EJB-sched in its service order."""
        wanting = [
            e
            for e, a in self.apps.items()
            if a.phase in ("waiting", "running")
            and (a.spares or not self.spares)  # a manager using spares has none left for it
            and self.ejb.wants_slots(e)
            and self._j0_planned(a, now)
            and not self._j0_starting(a)
        ]
        found: dict[str, Slots] = {}
        for eid in self.ejb.service_order(wanting):
            app = self.apps[eid]
            if app.migration is not None:
                continue  # one move at a time
            if app.partition not in found:
                found[app.partition] = self.probe.slots(app.partition)
            slots = found[app.partition]
            if slots.empty:
                continue
            actions = self.ejb.slots_available(eid, slots)
            if actions:
                self._execute(app, actions, now)
                if any(isinstance(a, SubmitSubjob) for a in actions):
                    return True  # the next pass sees fresh slots
        return False

    def _j0_planned(self, app: AppRecord, now: float) -> bool:
        """Whether the slots may be trusted for ``app``: they come from Slurm's backfill plan, and
        until a pass has planned its pending J0 on nodes, an idle node that looks free for a subjob
        may be one J0 will start on (a subjob there would then never start: it delays J0)."""
        j0 = app.subjobs.get(J0_KEY)
        if j0 is None or j0.job_id is None or j0.state != "pending":
            return True
        _start, nodes = self.probe.plan.get(j0.job_id, (None, ()))
        return bool(nodes) or now - app.submitted > PLAN_WAIT

    def _j0_starting(self, app: AppRecord) -> bool:
        """Whether no running job holds a node J0 is planned on: it starts at the scheduler's next
        pass, and a subjob now gains nothing. (Right after the job holding them ends, the plan
        still shows that job's end as J0's start: the slots would look better than J0 for a moment.)"""
        j0 = app.subjobs.get(J0_KEY)
        snap = self.probe.snap
        if j0 is None or j0.job_id is None or j0.state != "pending" or snap is None:
            return False
        _start, nodes = self.probe.plan.get(j0.job_id, (None, ()))
        held = {n for job in snap.running for n in job.nodes}
        return bool(nodes) and not held.intersection(nodes)

    # -- EJB-sched's actions ---------------------------------------------------------------------
    def _execute(self, app: AppRecord, actions: list[Action], now: float) -> None:
        leaving: list[int] = []  # subjobs this batch's cancellations leave to a migration
        for act in actions:
            if isinstance(act, SubmitSubjob):
                self._submit(app, act, now)
            elif isinstance(act, CancelSubjob):
                if self._cancel_subjob(app, act, now):
                    leaving.append(act.key)
            elif isinstance(act, Migrate):
                move = Migration(list(act.to_keys), leaving, started=now)
                leaving = []
                if app.migration is None:
                    app.migration = move
                else:
                    app.queued.append(move)  # one move at a time, in EJB-sched's order
                app.log(now, f"migrate-dest: ranks to subjob(s) {move.to}"
                        + (f" from {move.source}" if move.source else "") + f" ({act.reason})")  # fmt: skip

    def _submit(self, app: AppRecord, act: SubmitSubjob, now: float) -> None:
        limit = act.limit if math.isfinite(act.limit) else app.limit * app.o_max
        try:
            if not self.probe.starts_now(act.procs, limit, app.partition):
                app.log(now, f"slot for subjob {act.key} ({act.procs} nodes) refused by sbatch --test-only")
                return  # EJB-sched withdraws the unsubmitted subjob at its next offer
        except Exception as exc:
            app.log(now, f"slot check failed ({exc}); subjob {act.key} not submitted")
            return
        job_id = self._use_spare(app, act, limit, now) if self.spares else self._sbatch(app, act, limit, now)
        if job_id is None:
            return
        crash_point("ejb-submitted")  # tests: the job is in the queue, the manager does not know its id
        sub = app.subjobs[act.key]
        sub.job_id, sub.state = job_id, "pending"
        self.ejb.bound(app.eid, act.key, job_id, now)
        self.counters["submitted"] += 1
        how = "submitted" if sub.spare is None else f"released spare {sub.spare} as"
        app.log(now, f"{how} subjob {act.key} = job {job_id}: {act.procs} nodes, {limit:.0f} s "
                     f"({act.reason})")  # fmt: skip
        log.info("job %s: subjob %s = job %s (%s nodes, %.0f s): %s", app.eid, act.key, job_id, act.procs,
                 limit, act.reason)  # fmt: skip
        self._save()

    def _sbatch(self, app: AppRecord, act: SubmitSubjob, limit: float, now: float) -> int | None:
        """The subjob submitted by sbatch as the application's owner, with the environment
        ejb-submit ran in (the user's environment never reaches a root process:
        :meth:`SlurmCluster.submit_as`); its id, None (logged) if sbatch refused."""
        secret = secrets.token_hex(12)
        pilot = f"{self.pilot_address}:{secret}:sub"
        name = subjob_name(app.eid, act.key)
        argv = jobs.subjob_argv(app.options, app.script, act.procs, limit, name, app.output, app.error)
        app.subjobs[act.key] = SubjobRecord(act.key, None, act.procs, limit, secret, state="submitting")
        self._save()  # written ahead: a manager killed during sbatch adopts the job by its name
        try:
            return self.backend.submit_as(app.owner, argv, jobs.pilot_env(app.env, pilot), app.cwd)
        except RuntimeError as exc:
            del app.subjobs[act.key]
            app.log(now, f"subjob {act.key} not submitted: {exc}")
            return None

    def _use_spare(self, app: AppRecord, act: SubmitSubjob, limit: float, now: float) -> int | None:
        """The subjob made of one of the application's spares, reshaped, renamed and released (a
        manager that is not root cannot submit as the owner); its id, None (logged) if none is left
        or Slurm refused."""
        if not app.spares:
            app.log(now, f"subjob {act.key} not submitted: no spare left (queued by ejb-submit: "
                         f"{len(app.spare_secrets)})")  # fmt: skip
            return None
        index, job_id = min(app.spares.items())
        del app.spares[index]
        job = self.probe.snap.job(job_id) if self.probe.snap is not None else None
        if job is None or job.user != app.owner or job.name != spare_name(app.eid, index):
            app.log(now, f"spare {index} (job {job_id}) left the pool: not the held spare it was")
            return None  # an id Slurm gave again after losing state is not ours to touch
        app.subjobs[act.key] = SubjobRecord(act.key, job_id, act.procs, limit, app.spare_secrets[index],
                                            state="submitting", spare=index)  # fmt: skip
        self._save()  # written ahead: a manager killed here releases it again at its next pass
        try:
            self.backend.release_held(job_id, act.procs, limit, subjob_name(app.eid, act.key))
        except RuntimeError as exc:  # gone (its owner cancelled it), or a limit Slurm enforces
            del app.subjobs[act.key]
            app.spares[index] = job_id  # the next pass drops it if it has gone
            app.log(now, f"subjob {act.key} not released from spare {index} (job {job_id}): {exc}")
            return None
        return job_id

    def _cancel_subjob(self, app: AppRecord, act: CancelSubjob, now: float) -> bool:
        """Cancel now, or (True) once a migration has moved the subjob's ranks away."""
        sub = app.subjobs.get(act.key)
        if sub is None or sub.job_id is None or sub.state == "gone":
            return False
        if sub.members and app.phase == "running" and act.at > now:
            sub.leaving = True  # its ranks move first; the job ends when they are gone
            app.log(now, f"subjob {act.key} (job {sub.job_id}) to be left: {act.reason}")
            return True
        if sub.spare is not None and sub.state == "pending" and self._hold_again(app, sub, act.reason, now):
            return False
        sub.cancelled = True
        self._order(app, act.key, {"do": "exit"})
        self._cancel(app, sub)
        app.log(now, f"cancelled subjob {act.key} (job {sub.job_id}): {act.reason}")
        log.info("job %s: cancelled subjob %s (job %s): %s", app.eid, act.key, sub.job_id, act.reason)
        return False

    def _hold_again(self, app: AppRecord, sub: SubjobRecord, why: str, now: float) -> bool:
        """A pending subjob made of a spare held and renamed back into the spares (a pool used up
        by subjobs that lost their slot would leave nothing to start); False if it has started."""
        assert sub.spare is not None and sub.job_id is not None
        try:
            self.backend.hold_again(sub.job_id, spare_name(app.eid, sub.spare))
        except RuntimeError:
            return False
        del app.subjobs[sub.key]
        app.spares[sub.spare] = sub.job_id
        app.log(now, f"subjob {sub.key} (job {sub.job_id}) held again as spare {sub.spare}: {why}")
        return True

    def _cancel(self, app: AppRecord, sub: SubjobRecord) -> None:
        """A subjob by its id and name (an id Slurm gave again after losing state is not ours), J0
        by its id."""
        if sub.job_id is None:
            return  # never submitted
        name = None if sub.key == J0_KEY else subjob_name(app.eid, sub.key)
        self.backend.cancel_quietly(sub.job_id, name)

    def _end(self, app: AppRecord, phase: str, why: str) -> list[int]:
        """The application is over (or cancelled): everything EJB still has goes."""
        now = time.time()
        app.phase, app.ended = phase, now
        app.migration, app.queued = None, []
        app.log(now, why)
        log.info("job %s: %s", app.eid, why)
        if self.ejb.jobs[app.eid].state is not ElasticState.DONE:
            self.ejb.completed(app.eid, now)  # its cancel actions are done below, for every job
        cancelled = []
        for sub in app.subjobs.values():
            told = self._order(app, sub.key, {"do": "exit"})  # a running pilot ends its job by itself
            if sub.job_id is None or sub.state == "gone":
                continue  # never submitted, or already gone
            if sub.state == "pending" or phase == "cancelled" or not told:
                self._cancel(app, sub)
                cancelled.append(sub.job_id)
        for index, job_id in sorted(app.spares.items()):
            self.backend.cancel_quietly(job_id, spare_name(app.eid, index))
            cancelled.append(job_id)
        app.spares.clear()
        self._drop_agent(app.eid)
        self._save()
        return cancelled

    # -- the applications' checks (DMR protocol) -------------------------------------------------
    def check_now(self, req: p.Check, peer: Peer | None = None) -> None:
        """The server's quick path for checks (see ``Controller.check_now``): none here, every
        check takes the full path (it only holds the manager's lock for a moment)."""
        return None

    def check(self, req: p.Check, peer: Peer | None = None) -> p.Decision | p.Error:
        self.counters["check"] += 1
        with self.lock:
            app = self.apps.get(req.job_id)
            if app is None:
                return _none(f"job {req.job_id} is not bundled by this EJB manager")
            if peer is not None and not may_act(peer, app.owner):
                return p.Error(message=f"permission denied: job {req.job_id} belongs to {app.owner}")
            app.progress, app.step_seconds = req.progress, req.step_seconds
            if req.progress is not None:
                self.ejb.report_progress(app.eid, req.progress)  # J0's choices weigh the real progress
            mig = app.migration
            if mig is None or app.phase != "running":
                return _none("no migration due")
            now = time.time()
            before = replace(mig)  # a copy: the steps below change the migration in place
            self._settle(app, mig, req, now)
            mig = app.migration
            if mig is None:
                answer = _none("migration done")
            elif mig.phase == "expand":
                answer = self._migrate_in(app, mig, req, now)
            elif mig.phase == "shrink":
                answer = self._migrate_out(app, mig, req, now)
            else:
                answer = _none(f"migration {mig.phase}")
            if app.migration != before:  # a step taken (its token) is saved before the application hears it
                self._save()
            return answer

    def _settle(self, app: AppRecord, mig: Migration, req: p.Check, now: float) -> None:
        """A check while a step of the migration is unanswered (its commit or ready got lost,
        e.g. to a restart of this manager): the application finished that step; where its ranks
        run says how it went."""
        if mig.phase == "joining":
            dest = {h for k in mig.to for h in app.subjobs[k].hosts}
            joined = dest <= set(req.nodes)
            app.log(
                now, f"migrate-dest settled from the application's nodes: {'joined' if joined else 'failed'}"
            )
            self._joined(app, mig, joined, now)
        elif mig.phase == "leaving":
            source = {h for k in mig.source for h in app.subjobs[k].hosts}
            if source & set(req.nodes):
                mig.phase = "shrink"
            else:
                self._migrated(app, now)

    def _joined(self, app: AppRecord, mig: Migration, ok: bool, now: float) -> None:
        if ok:
            app.log(now, "migrate-dest: the new groups joined")
            if mig.source:
                mig.phase = "shrink"
            else:
                self._migrated(app, now)
            return
        mig.tries += 1
        for k in mig.to:
            app.subjobs[k].members = False
        mig.phase = "expand" if mig.tries < EXPAND_TRIES else "failed"
        app.log(now, f"migrate-dest: the new groups did not join (try {mig.tries})")
        if mig.phase == "failed":
            self._next_move(app)

    def _migrate_in(self, app: AppRecord, mig: Migration, req: p.Check, now: float) -> p.Decision:
        dest = [app.subjobs[k] for k in mig.to if k in app.subjobs]
        if not dest or any(d.state != "running" or (app.eid, d.key) not in self.pilots for d in dest):
            return _none("waiting for the destination subjob's worker")
        hosts = [h for d in dest for h in d.hosts]
        keep = [n for n in req.nodes if n not in {h for k in mig.source for h in app.subjobs[k].hosts}]
        ppn = self._ppn(app, len(keep) + len(hosts))  # the nodes the application keeps afterwards
        mig.token = secrets.token_hex(6)
        order = {"do": "launch", "token": mig.token, "ppn": ppn, "env": self._launch_env(app)}
        for d in dest:
            if not self._order(app, d.key, order):
                return _none("the destination subjob's worker is unreachable")
            d.members = True
        mig.phase = "joining"
        self.counters["expand"] += 1
        app.log(now, f"migrate-dest: {len(hosts)} groups of {ppn} ranks start on {hosts}")
        return p.Decision(p.ACTION_EXPAND, len(req.nodes) + len(hosts), hosts, mig.token,
                          f"EJB migration into subjob(s) {mig.to}", groups=len(hosts), launch=[])  # fmt: skip

    def _migrate_out(self, app: AppRecord, mig: Migration, req: p.Check, now: float) -> p.Decision:
        leaving = {h for k in mig.source for h in app.subjobs[k].hosts}
        keep = [n for n in req.nodes if n not in leaving]
        if not keep or len(keep) == len(req.nodes):
            self._next_move(app)
            app.log(now, f"migration dropped: cannot leave {sorted(leaving)} of {req.nodes}")
            return _none("nothing to leave")
        mig.token = secrets.token_hex(6)
        mig.phase = "leaving"
        self.counters["shrink"] += 1
        app.log(now, f"migrate: ranks on {sorted(leaving)} hand over their data and leave")
        return p.Decision(p.ACTION_SHRINK, len(keep), keep, mig.token, f"EJB migration out of {mig.source}")

    def commit(self, req: p.Commit, peer: Peer | None = None) -> p.Done | p.Error:
        with self.lock:
            app = self.apps.get(req.job_id)
            mig = app.migration if app is not None else None
            if app is None or mig is None or mig.token != req.token:
                return p.Done(ok=False, reason="no such migration in flight")
            if peer is not None and not may_act(peer, app.owner):
                return p.Error(message=f"permission denied: job {req.job_id} belongs to {app.owner}")
            now = time.time()
            if mig.phase == "joining":
                self._joined(app, mig, req.ok, now)
                self._save()
                crash_point("ejb-joined")  # tests: the application never hears back
            elif mig.phase == "leaving" and not req.ok:
                self._next_move(app)
                app.log(now, "migration refused by the application")
            self._save()
            return p.Done(ok=True, reason="noted")

    def _migrated(self, app: AppRecord, now: float) -> None:
        app.migrations += 1
        app.log(now, f"migration {app.migrations} done")
        self._next_move(app)

    @staticmethod
    def _next_move(app: AppRecord) -> None:
        app.migration = app.queued.pop(0) if app.queued else None

    def ack(self, req: p.Ack, peer: Peer | None = None) -> p.Done | p.Error:
        app = self.apps.get(req.job_id)
        if app is not None and peer is not None and not may_act(peer, app.owner):
            return p.Error(message=f"permission denied: job {req.job_id} belongs to {app.owner}")
        with self.ack_cond:
            self.acks.setdefault((req.job_id, req.token), set()).add(req.rank)
            self.ack_cond.notify_all()
        return p.Done(ok=True)

    def shrink_ready(self, req: p.ShrinkReady, peer: Peer | None = None) -> p.Done | p.Error:
        with self.lock:
            app = self.apps.get(req.job_id)
            mig = app.migration if app is not None else None
            if app is None or mig is None or mig.token != req.token or mig.phase != "leaving":
                return p.Done(ok=False, reason="no such migration in flight")
            if peer is not None and not may_act(peer, app.owner):
                return p.Error(message=f"permission denied: job {req.job_id} belongs to {app.owner}")
        deadline = time.monotonic() + ACK_TIMEOUT
        with self.ack_cond:
            while len(self.acks.get((req.job_id, req.token), ())) < req.acks:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.ack_cond.wait(left)
            got = len(self.acks.pop((req.job_id, req.token), ()))
        with self.lock:
            now = time.time()
            app.log(now, f"migrate: {got} of {req.acks} leaving ranks acknowledged")
            self._migrated(app, now)
            self._save()
        return p.Done(ok=True, reason="migrated")

    def status(self) -> p.Status:
        """For the DMR protocol's status request."""
        with self.lock:
            flight = {str(a.eid): a.migration.phase for a in self.apps.values() if a.migration is not None}
        return p.Status(in_flight=flight, counters=dict(self.counters))

    # -- persistence -----------------------------------------------------------------------------
    def _save(self) -> None:
        self.store.save(self.apps, self.ejb)

    def close(self) -> None:
        with self.lock:
            self._save()
            for eid in list(self.agents):
                found = self.agents.pop(eid)
                found[1].shutdown()
                found[1].server_close()


def _public(app: AppRecord) -> dict[str, Any]:
    """What anyone may see of a bundled job (as squeue shows every job): not its owner's
    environment, nor the secrets its pilots and agent prove themselves with."""
    out = app.to_json()
    for key in ("env", "agent_key", "spare_secrets"):
        out.pop(key, None)
    for sub in out["subjobs"].values():
        sub.pop("secret", None)
    return out


def _first_node_of(snap: Snapshot, partitions: str) -> str:
    """The first node of ``partitions`` (Slurm's comma list) in ``snap``; "" if none (or none given)."""
    names = {p for p in partitions.split(",") if p}
    return next((n.name for n in snap.nodes if names.intersection(n.partitions)), "")


def _options(raw: list[list[Any]]) -> list[list[str | None]]:
    return [[str(n), None if v is None else str(v)] for n, v in raw]


def _none(reason: str) -> p.Decision:
    return p.Decision(p.ACTION_NONE, reason=reason)

"""`SlurmCluster`: the live backend of :class:`slurm_ext.backend.ClusterBackend`.

Reads are one ``squeue --json`` plus one ``sinfo --json`` per snapshot (pyslurm has no release
for Slurm 22.05 and cannot change node counts, so everything goes through the commands).
Writes use ``sbatch``, ``salloc --no-shell``, ``scontrol update`` and ``scancel``.

Every reading of Slurm in the toolkit goes through here: the service's, the EJB manager's
(:class:`ejb.live.backend.EJBBackend` is what it asks of this class), the demo's, and a site's
accounting read as a workload (:meth:`SlurmCluster.accounting`). Partitions are read once, with
the nodes (:meth:`SlurmCluster.nodes`, ``Node.partitions``).
"""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path

from slurm_ext.backend import (
    EXPANDER_PREFIX,
    RESIZER_PREFIX,
    JobRequest,
    expander_name,
    resizer_name,
    served_job,
)
from slurm_ext.errors import InvalidRequest, JobNotFound, ResizeTimeout, SlurmError, SlurmUnavailable
from slurm_ext.faults import crash_point
from slurm_ext.model import Job, Node, Snapshot
from slurm_ext.partitions import partition_members
from slurm_ext.slurm.commands import SlurmCommands, classify
from slurm_ext.slurm.parse import (
    compress_nodes,
    expand_nodes,
    parse_array_states,
    parse_jobs,
    parse_nodes,
    parse_salloc_job_id,
    parse_test_only,
)
from slurm_ext.slurm.release import SlurmRelease, detect_release
from slurm_ext.slurm.settings import files_appended, merge_refused, parse_config

# Slurm refuses priorities >= 0xFFFFFFFE ("Priority must be < 4294967294").
TOP_PRIORITY = 4294967293
SUBMIT_AS_TIMEOUT = 60.0  # seconds sbatch may take when run as a job's owner


def accounting_command(start: str, end: str, partition: str | None = None) -> list[str]:
    """``sacct --json -a -X -S START -E END [-r PARTITION]``: every user's jobs of the window, one
    record each (no steps)."""
    cmd = ["sacct", "--json", "-a", "-X", "-S", start, "-E", end]
    return cmd + (["-r", partition] if partition else [])


# crash points between the merge's Slurm commands (the crash tests end the service there)
MERGE_RESIZER_RUNNING = "merge:resizer-running"  # the resizer holds the nodes; nothing handed over yet
MERGE_HANDED_OVER = "merge:handed-over"  # the resizer gave its nodes up (NumNodes=0), not cancelled yet
MERGE_RESIZER_GONE = "merge:resizer-cancelled"  # cancelled; the job has not taken them (NumNodes=ALL)


class SlurmCluster:
    """Live Slurm through its commands. Thread-safe: it holds no mutable state but the release.

    Works with Slurm 22.05, 24.11 and 26.05 alike (the parser reads each release's output).
    ``command_prefix``: run the commands through e.g. ``docker exec -i <container>``.
    """

    def __init__(
        self,
        slurm_conf: Path | None = None,
        partition: str | None = None,
        timeout: float = 30.0,
        command_prefix: Sequence[str] = (),
    ) -> None:
        self.cmd = SlurmCommands(slurm_conf, timeout, command_prefix)
        self.partition = partition

    def as_user(self, user: str) -> SlurmCluster:
        """The same cluster, its commands run as ``user`` (through ``runuser``: this process is root)."""
        other = copy.copy(self)
        other.cmd = copy.copy(self.cmd)
        other.cmd.prefix = [*self.cmd.prefix, "runuser", "-u", user, "--"]
        return other

    @cached_property
    def release(self) -> SlurmRelease:
        """The cluster's Slurm release (``sinfo --version``), asked once."""
        return detect_release(self.cmd)

    # ----- reads -------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        jobs = self._read_json(["squeue", "--json"])
        return Snapshot(time=time.time(), nodes=tuple(self.nodes()), jobs=tuple(parse_jobs(jobs)))

    def nodes(self) -> list[Node]:
        """Every node once, with its state, CPUs and partitions: one ``sinfo --json`` (the
        snapshot's reading of the nodes)."""
        return parse_nodes(self._read_json(["sinfo", "--json"]))

    def partitions(self, nodes: Sequence[Node] | None = None) -> dict[str, set[str]]:
        """Partition -> its nodes' names, from the nodes' own partitions (``Node.partitions``): of
        ``nodes`` if given (a snapshot's), else of one :meth:`nodes` reading. A node in several
        partitions is in each; the default partition is not marked (:meth:`default_partition`)."""
        return partition_members(self.nodes() if nodes is None else nodes)

    def default_partition(self) -> str:
        """Slurm's default partition, where a job asking for none goes: ``sinfo``'s starred one
        (``sinfo --json`` does not say which it is in 22.05); "" where sinfo names none."""
        res = self.cmd.run(["sinfo", "-h", "-o", "%P"], check=False)
        return next((w[:-1] for w in res.stdout.split() if w.endswith("*")), "")

    def node_hostname(self, node: str) -> str:
        """The host a node runs on (``scontrol show node``'s NodeHostName); the node's own name
        where Slurm does not say (an unknown node)."""
        res = self.cmd.run(["scontrol", "show", "node", "-o", node], check=False)
        return next((w.split("=", 1)[1] for w in res.stdout.split() if w.startswith("NodeHostName=")), node)

    def job_file_append(self) -> bool:
        """slurm.conf's JobFileAppend: a job's files are opened for appending unless it asks
        otherwise. False where ``scontrol show config`` fails."""
        return files_appended(self.config(check=False))

    def accounting(
        self, start: str, end: str, partition: str | None = None, timeout: float | None = None
    ) -> str:
        """The text of :func:`accounting_command` (sacct's JSON): the jobs of the window
        ``START..END`` (any form sacct takes), of ``partition`` only if given.

        :class:`SlurmUnavailable` if sacct is missing (caused by FileNotFoundError) or does not
        answer within ``timeout`` seconds (else the adapter's); a :class:`SlurmError` "COMMAND
        failed (exit N): its first line" if it fails.
        """
        cmd = accounting_command(start, end, partition)
        res = self.cmd.run(cmd, timeout=timeout, check=False)
        if res.returncode != 0:
            said = (res.stderr or res.stdout).strip()
            first = said.splitlines()[0] if said else "no message"
            raise classify(said)(f"{' '.join(cmd)} failed (exit {res.returncode}): {first}", cmd, said)
        return res.stdout

    def _read_json(self, args: list[str]) -> dict:
        """A ``--json`` read. Slurm exits 0 with an ``errors`` array when slurmctld is unreachable:
        that must not read as an empty cluster (the service would take every job for gone).
        """
        res = self.cmd.run(args)
        try:
            doc = json.loads(res.stdout)
        except json.JSONDecodeError as exc:
            raise SlurmUnavailable(f"{args[0]} --json printed no JSON ({exc})", args, res.stderr) from None
        if errors := doc.get("errors"):
            said = "; ".join(
                str(e.get("description") or e.get("error") or e) if isinstance(e, dict) else str(e)
                for e in errors
            )
            raise SlurmUnavailable(f"{args[0]}: {said}", args, said)
        return doc

    def job(self, job_id: int, snap: Snapshot | None = None) -> Job:
        """The pending or running job ``job_id``, or JobNotFound."""
        if job_id < 1:
            raise JobNotFound(f"invalid job id {job_id}")
        job = (snap or self.snapshot()).job(job_id)
        if job is None:
            raise JobNotFound(f"job {job_id} is not pending or running on this cluster (unknown or finished)")
        return job

    def would_start_now(self, nodes: int, time_limit: float | None = None, slack: float = 5.0) -> bool:
        """``sbatch --test-only``: could a job of this shape start right away?"""
        start, _ = self.test_only(nodes, time_limit)
        return start <= time.time() + slack

    def test_only(
        self, nodes: int, time_limit: float | None = None, exclude: Sequence[str] = (), partition: str = "",
        whole: bool = False,
    ) -> tuple[float, tuple[str, ...]]:  # fmt: skip
        """``sbatch --test-only``: when and where a job of this shape would start (epoch seconds, nodes).

        Slurm answers for its main scheduler: a job is placed behind every pending job of higher
        priority, so a job that backfill would start at once is often reported to start later.
        ``exclude``: nodes the job must not use (``-x``); ``partition``: where (else the adapter's);
        ``whole``: on whole nodes (``--exclusive``: not on a node a job of another holds part of).
        """
        args = ["sbatch", "--test-only", "-N", str(nodes), *self._partition_args(partition)]
        args += ["--exclusive"] if whole else []
        if time_limit is not None:
            args += ["-t", str(max(1, math.ceil(time_limit / 60)))]
        if exclude:
            args += ["-x", compress_nodes(list(exclude))]
        res = self.cmd.run([*args, "--wrap", "true"], check=False)
        try:
            start, where = parse_test_only(res.stderr + res.stdout)
        except ValueError:
            msg = (res.stderr or res.stdout).strip()
            raise classify(msg)(f"sbatch --test-only: {msg}", args, msg) from None
        return start.timestamp(), where

    def show_job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o``'s ``Key=value`` words (empty for a job Slurm does not know)."""
        res = self.cmd.run(["scontrol", "show", "job", "-o", str(job_id)], check=False)
        return dict(w.split("=", 1) for w in res.stdout.split() if "=" in w)

    def stdout_of(self, job_id: int) -> str:
        """The file a job's output goes to, as Slurm resolved it (``scontrol show job``'s StdOut)."""
        return self.show_job(job_id).get("StdOut", "")

    def set_stdout(self, job_id: int, path: str) -> None:
        """Point a job's output at ``path`` (``scontrol update JobId=X StdOut=PATH``), without
        complaint if Slurm refuses (a job that has ended)."""
        self.cmd.run(["scontrol", "update", f"JobId={job_id}", f"StdOut={path}"], check=False)

    def planned_starts(self) -> dict[int, tuple[float | None, tuple[str, ...]]]:
        """Pending jobs' planned start and nodes as the last backfill pass left them (``squeue %S %Y``)."""
        res = self.cmd.run(["squeue", "-h", "-t", "PD", "-o", "%i|%S|%Y"], check=False)
        if res.returncode != 0:
            raise SlurmUnavailable(f"squeue: {res.stderr.strip()}", ["squeue"], res.stderr)
        out: dict[int, tuple[float | None, tuple[str, ...]]] = {}
        for line in res.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 3 or not parts[0].isdigit():
                continue
            try:
                start: float | None = datetime.fromisoformat(parts[1]).timestamp()
            except ValueError:
                start = None  # N/A: not planned (yet)
            nodes = () if parts[2] in ("", "(null)") else expand_nodes(parts[2])
            out[int(parts[0])] = (start, nodes)
        return out

    def steps_on(self, job_id: int, nodes: Sequence[str]) -> list[str]:
        """Ids of the job's application steps (not batch/extern) running on any of ``nodes``.

        A shrink must wait for these to end: Slurm kills tasks on released nodes.
        """
        if not nodes:
            return []
        out = self.cmd.run(["squeue", "-h", "-s", "-j", str(job_id), "-o", "%i %N"], check=False).stdout
        wanted = set(nodes)
        hits = []
        for line in out.splitlines():
            step, _, where = line.strip().partition(" ")
            if not step.endswith((".batch", ".extern")) and wanted & set(expand_nodes(where)):
                hits.append(step)
        return hits

    # ----- job lifecycle -----------------------------------------------------------------------
    def submit(self, request: JobRequest) -> int:
        if request.nodes < 1:
            raise InvalidRequest(f"a job needs at least 1 node, got {request.nodes}")
        args = ["sbatch", "--parsable", "-N", str(request.nodes), "-J", request.name, *self._partition_args()]
        if request.time_limit is not None:
            args += ["-t", str(max(1, math.ceil(request.time_limit / 60)))]
        if request.dependency:
            args += [f"--dependency={request.dependency}"]
        if request.array:
            args += [f"--array={request.array}"]
        args += list(request.extra_args)
        if request.script:
            args.append(request.script)
        else:
            args += ["--wrap", request.command or "sleep infinity"]
        out = self.cmd.run(args).stdout.strip()
        return int(out.split(";")[0])

    def submit_as(
        self,
        user: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        timeout: float = SUBMIT_AS_TIMEOUT,
    ) -> int:
        """``argv`` (an ``sbatch --parsable`` command line) run as ``user`` in ``cwd`` with ``env``
        (and this cluster's SLURM_CONF); returns the new job's id.

        Run by root for another user, sbatch goes through ``runuser``; that user's environment must
        not reach the root process (``LD_PRELOAD`` and friends), so it goes to sbatch as an
        ``--export-file`` read from a pipe, after the switch to the user. A :class:`SlurmError` (a
        RuntimeError) with sbatch's message if it fails; a timeout is not caught
        (``subprocess.TimeoutExpired``): the job may be in the queue all the same.
        """
        argv = list(argv)
        conf = {k: v for k, v in self.cmd.env.items() if k == "SLURM_CONF"}
        run_env = {**env, **conf}
        fds: tuple[int, ...] = ()
        if user and user != _current_user():
            read, write = os.pipe()
            payload = b"".join(f"{k}={v}".encode() + b"\0" for k, v in run_env.items() if "=" not in k)
            threading.Thread(target=_write_all, args=(write, payload), daemon=True).start()
            argv = ["runuser", "-u", user, "--", argv[0], f"--export-file={read}", *argv[1:]]
            run_env, fds = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **conf}, (read,)
        try:
            res = subprocess.run([*self.cmd.prefix, *argv], capture_output=True, text=True, cwd=cwd,
                                 env=run_env, check=False, timeout=timeout, pass_fds=fds)  # fmt: skip
        finally:
            for fd in fds:
                os.close(fd)
        if res.returncode != 0:
            msg = res.stderr.strip()
            raise classify(msg)(msg or f"sbatch exited {res.returncode}", argv, msg)
        return int(res.stdout.strip().split(";")[0])

    def cancel(self, job_id: int) -> None:
        self.job(job_id)  # scancel is silent about unknown ids; we are not
        self.cmd.run(["scancel", str(job_id)])

    # ----- resizing ----------------------------------------------------------------------------
    def shrink(
        self, job_id: int, new_size: int, keep: Sequence[str] | None = None, snap: Snapshot | None = None
    ) -> None:
        """Release nodes of a running job. ``keep`` names the nodes to keep (default: Slurm's choice).

        Slurm kills tasks on released nodes at once: the application must have left them.
        ``snap``: a snapshot just taken by the caller, to skip reading the cluster again.
        """
        job = self._running(job_id, "shrink", snap)
        if not 1 <= new_size < job.node_count:
            raise InvalidRequest(
                f"cannot shrink job {job_id} from {job.node_count} to {new_size} nodes "
                f"(must be 1..{job.node_count - 1})"
            )
        if keep is not None:
            if len(keep) != new_size or not set(keep) <= set(job.nodes):
                raise InvalidRequest(
                    f"keep={list(keep)} must be {new_size} of the job's nodes {list(job.nodes)}"
                )
            self.cmd.run(["scontrol", "update", f"JobId={job_id}", f"NodeList={compress_nodes(list(keep))}"])
        else:
            self.cmd.run(["scontrol", "update", f"JobId={job_id}", f"NumNodes={new_size}"])

    def expand(self, job_id: int, new_size: int, timeout: float = 10.0, snap: Snapshot | None = None) -> None:
        """Grow a running job with the resizer-job sequence; on any failure the resizer is cancelled.

        1. ``salloc --no-shell -N k --dependency=expand:A --immediate=T`` at top priority (a resizer must
           have no steps, hence salloc and not sbatch); ``--immediate`` is the deadline.
        2. ``scontrol update JobId=B NumNodes=0``  (B's nodes become free-floating, held for A)
        3. ``scancel B``;  4. ``scontrol update JobId=A NumNodes=ALL``  (A absorbs them)
        """
        job = self._running(job_id, "expand", snap)
        extra = new_size - job.node_count
        if extra < 1:
            raise InvalidRequest(f"cannot expand job {job_id} from {job.node_count} to {new_size} nodes")
        deadline = max(1, math.ceil(timeout))
        res = self.cmd.run(
            [
                "salloc",
                "--no-shell",
                "-N",
                str(extra),
                f"--dependency=expand:{job_id}",
                f"--immediate={deadline}",
                f"--priority={TOP_PRIORITY}",
                "-J",
                resizer_name(job_id),
                *self._partition_args(job.partition),  # the job's own: Slurm merges nothing from another
            ],
            timeout=deadline + 30,
            check=False,
        )
        resizer = parse_salloc_job_id(res.stderr + res.stdout)
        if res.returncode != 0 or resizer is None:
            self._cancel_quietly(resizer, resizer_name(job_id))
            msg = res.stderr.strip()
            if "timed out" in msg.lower() or "unable to allocate" in msg.lower():
                raise ResizeTimeout(
                    f"no {extra} free node(s) for job {job_id} within {deadline} s; resizer cancelled",
                    stderr=msg,
                )
            raise SlurmError(f"resizer for job {job_id} failed: {msg}", stderr=msg)
        try:
            crash_point(MERGE_RESIZER_RUNNING)
            self.cmd.run(["scontrol", "update", f"JobId={resizer}", "NumNodes=0"])
            crash_point(MERGE_HANDED_OVER)  # tests: a service dying between Slurm's steps
        finally:
            self._cancel_quietly(resizer, resizer_name(job_id))
        crash_point(MERGE_RESIZER_GONE)
        self.cmd.run(["scontrol", "update", f"JobId={job_id}", "NumNodes=ALL"])
        # Slurm may answer rc 0 without adding anything (e.g. after a failed hand-over): check.
        got = self.job_state(job_id)[1]
        if len(got) != new_size:
            raise SlurmError(f"merge into job {job_id} left it on {len(got)} node(s), not {new_size}")

    def expansion_permitted(self) -> bool:
        """True if a running job can grow in place here: ``permit_job_expansion`` under
        ``select/linear`` (see :func:`slurm_ext.slurm.settings.merge_refused`)."""
        return merge_refused(self.config()) is None

    def config(self, check: bool = True) -> dict[str, str]:
        """``scontrol show config`` as a dict (:func:`slurm_ext.slurm.settings.parse_config`);
        empty where it fails and ``check`` is False."""
        return parse_config(self.cmd.run(["scontrol", "show", "config"], check=check).stdout)

    def job_state(self, job_id: int) -> tuple[str, tuple[str, ...]]:
        """(state, nodes) of one job from a light ``squeue`` call; ("", ()) once it is gone."""
        # --states=all: from 23.02 on a finished job is listed only then (22.05 lists it either way)
        res = self.cmd.run(["squeue", "-h", "--states=all", "-j", str(job_id), "-o", "%T|%N"], check=False)
        line = res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout.strip() else ""
        if not line:
            return "", ()
        state, _, nodes = line.partition("|")
        return state, expand_nodes(nodes)

    def array_states(self, job_id: int) -> dict[int, str]:
        """Task index -> state of job array ``job_id``, one light ``squeue -r`` call; a task Slurm no
        longer lists (ended more than ``MinJobAge`` ago) is missing, and ``{}`` once the array is gone."""
        args = ["squeue", "-h", "-r", "--states=all", "-j", str(job_id), "-o", "%K|%T"]
        res = self.cmd.run(args, check=False)
        if res.returncode != 0:  # squeue fails on an id it no longer knows; other failures raise
            if "invalid job id" in (res.stderr or "").lower():
                return {}
            msg = (res.stderr or res.stdout).strip()
            raise classify(msg)(f"squeue: {msg}", args, msg)
        return parse_array_states(res.stdout)

    def expander_options(self, app: Job, nodes: int, time_limit: float | None) -> list[str]:
        """sbatch's options for a second job hosting new ranks of ``app``: ``nodes`` whole nodes,
        named after ``app``, in its partition, account and QoS, ``time_limit`` seconds at most, its
        output appended to ``app``'s."""
        if nodes < 1:
            raise InvalidRequest(f"an expander job needs at least 1 node, got {nodes}")
        args = ["-N", str(nodes), "--exclusive", "-J", expander_name(app.job_id)]
        for flag, value in (("-p", app.partition or self.partition), ("-A", app.account), ("-q", app.qos)):
            if value:
                args += [flag, value]
        if time_limit is not None:
            args += ["-t", str(max(1, math.floor(time_limit / 60)))]
        if app.workdir:
            args += [f"--chdir={app.workdir}"]
        return args + (
            [f"--output={app.stdout}", "--open-mode=append"] if app.stdout else ["--output=/dev/null"]
        )

    def submit_expander(
        self, app: Job, nodes: int, command: str, time_limit: float | None, agent: str = "", token: str = ""
    ) -> int:
        """Submit the expander job (:meth:`expander_options`, running ``command``) as ``app``'s owner;
        returns its id. A service that is not root cannot: it asks the application's ``agent`` (its
        owner's process, ``host:port:key``) to submit it for expansion ``token``."""
        options = self.expander_options(app, nodes, time_limit)
        if not app.user or app.user == _current_user():
            args = ["sbatch", "--parsable", *options, "--wrap", command]
        elif os.geteuid() == 0 or self.cmd.prefix:
            args = ["runuser", "-u", app.user, "--", "sbatch", "--parsable", *options, "--wrap", command]
        elif agent:
            return self._submit_by_agent(app, options, agent, token)
        else:
            raise SlurmError(
                f"cannot submit an expander job as {app.user}: this service runs as {_current_user()}, "
                "only root may submit a job as another user, and the application named no agent to"
            )
        out = self.cmd.run(args).stdout.strip()
        return int(out.split(";")[0])

    def _submit_by_agent(self, app: Job, options: list[str], agent: str, token: str) -> int:
        """The application's agent submits the expander job; it must be ``app``'s owner's, so named."""
        from slurm_ext.agent_client import AgentClient

        try:
            client = AgentClient(agent, timeout=SUBMIT_AS_TIMEOUT)
            try:
                helper = int(client.request("submit_expander", token=token, options=options)["job_id"])
            finally:
                client.close()
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            raise SlurmError(f"the agent of job {app.job_id} did not submit its expander job: {exc}") from exc
        shown = self.show_job(helper)
        user, name = shown.get("UserId", "").partition("(")[0], shown.get("JobName", "")
        if (user, name) != (app.user, expander_name(app.job_id)):
            # not the owner's (an agent run by another user), or unread: cancelled if so named
            self._cancel_quietly(helper, expander_name(app.job_id))
            raise SlurmError(f"the agent of job {app.job_id} submitted job {helper} as {user or 'nobody'} "
                             f"named {name or 'nothing'}: not {app.user}'s expander job")  # fmt: skip
        return helper

    def cancel_orphan_expanders(self, snap: Snapshot | None = None) -> list[int]:
        """Cancel expander jobs whose application is no longer running; returns their ids."""
        snap = snap or self.snapshot()
        running = {j.job_id for j in snap.running}
        orphans = [
            j
            for j in snap.jobs
            if (app := served_job(j.name, EXPANDER_PREFIX)) is not None and app not in running
        ]
        for job in orphans:
            self._cancel_quietly(job.job_id, job.name)
        return [j.job_id for j in orphans]

    def cancel_orphan_resizers(self, older_than: float, snap: Snapshot | None = None) -> list[int]:
        """Cancel resizer jobs submitted more than ``older_than`` seconds ago; returns their ids.

        Younger resizers may belong to an expansion in progress (of this or another service),
        so pass an age above the longest expand deadline.
        """
        snap = snap or self.snapshot()
        orphans = [
            j
            for j in snap.jobs
            if j.name.startswith(RESIZER_PREFIX) and snap.time - j.submit_time > older_than
        ]
        for job in orphans:
            self._cancel_quietly(job.job_id, job.name)
        return [j.job_id for j in orphans]

    # ----- priorities and limits ---------------------------------------------------------------
    def raise_priority(self, job_id: int) -> None:
        job = self.job(job_id)
        if not job.is_pending:
            raise InvalidRequest(f"job {job_id} is {job.state}; only a pending job can be moved up the queue")
        self.cmd.run(["scontrol", "update", f"JobId={job_id}", f"Priority={TOP_PRIORITY}"])

    def resize_pending(
        self, job_id: int, nodes: int, time_limit: float | None = None, name: str | None = None
    ) -> None:
        """``scontrol update JobId=X NumNodes=k-k`` on a pending job: it starts on ``k`` nodes; with
        ``time_limit`` (seconds) and ``name`` its limit and name set in the same update. One
        ``scontrol show job``, one update."""
        if nodes < 1:
            raise InvalidRequest(f"a job needs at least 1 node, got {nodes}")
        shown = self.show_job(job_id)
        if not shown:
            raise JobNotFound(f"job {job_id} is not pending or running on this cluster (unknown or finished)")
        if shown.get("JobState") != "PENDING":
            raise InvalidRequest(
                f"job {job_id} is {shown.get('JobState')}; only a pending job's size can be set"
            )
        # NumNodes min-max both (k alone keeps the maximum: Slurm may start it larger); its tasks
        # and CPUs scaled with it, whole nodes as before (else Slurm holds it: BadConstraints)
        old = int(shown.get("NumNodes", "1").split("-")[0] or 1) or 1
        words = [f"NumNodes={nodes}-{nodes}"]
        for key in ("NumTasks", "NumCPUs"):
            count = shown.get(key, "").split("-")[0]
            if count.isdigit():
                words.append(f"{key}={max(1, math.ceil(int(count) * nodes / old))}")
        if time_limit is not None:
            words.append(f"TimeLimit={self._minutes(time_limit)}")
        if name is not None:
            words.append(f"JobName={name}")
        self.cmd.run(["scontrol", "update", f"JobId={job_id}", *words])

    def release_held(self, job_id: int, nodes: int, time_limit: float, name: str) -> None:
        """A held pending job reshaped (:meth:`resize_pending`), renamed and released: how an EJB
        manager that is an Operator, not root, starts a spare subjob its owner queued."""
        self.resize_pending(job_id, nodes, time_limit, name)
        self.cmd.run(["scontrol", "release", str(job_id)])

    def hold_again(self, job_id: int, name: str) -> None:
        """A pending job held and renamed; an InvalidRequest, and its name unchanged, if it has
        started (``scontrol hold`` does not refuse a running job: the state is read once it is held,
        when a pending job can no longer start)."""
        self.cmd.run(["scontrol", "hold", str(job_id)])
        state = self.show_job(job_id).get("JobState", "gone")
        if state != "PENDING":
            raise InvalidRequest(f"job {job_id} is {state}; only a pending job can be held")
        self.cmd.run(["scontrol", "update", f"JobId={job_id}", f"JobName={name}"])

    def set_time_limit(self, job_id: int, seconds: float) -> bool:
        """Set the job's time limit (rounded up to whole minutes, as Slurm counts them)."""
        self.job(job_id)
        self.cmd.run(["scontrol", "update", f"JobId={job_id}", f"TimeLimit={self._minutes(seconds)}"])
        return True

    @staticmethod
    def _minutes(seconds: float) -> int:
        """A limit in whole minutes, as Slurm counts them (rounded up)."""
        if seconds <= 0:
            raise InvalidRequest(f"time limit must be positive, got {seconds} s")
        return math.ceil(seconds / 60)

    # ----- helpers -----------------------------------------------------------------------------
    def _partition_args(self, partition: str = "") -> list[str]:
        """``-p``: the partition given (a job's own), else the one this adapter was made for."""
        chosen = partition or self.partition
        return ["-p", chosen] if chosen else []

    def _running(self, job_id: int, verb: str, snap: Snapshot | None = None) -> Job:
        job = self.job(job_id, snap)
        if not job.is_running:
            raise InvalidRequest(f"cannot {verb} job {job_id}: it is {job.state}, not RUNNING")
        return job

    def _cancel_quietly(self, job_id: int | None, name: str | None = None) -> None:
        if job_id is not None:
            self.cmd.run(["scancel", *([f"--name={name}"] if name else []), str(job_id)], check=False)

    def cancel_quietly(self, job_id: int, name: str | None = None) -> None:
        """``scancel`` without complaint if the job has ended already. ``name``: only if the job still
        bears it: a slurmctld that lost its last seconds of state (killed) gives ids again, and a
        helper job's id may then be another user's job."""
        self._cancel_quietly(job_id, name)


def _current_user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _write_all(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError:
        pass  # sbatch did not read it: its own error says why

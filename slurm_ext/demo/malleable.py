"""The main demo: a malleable MPI app driven by the DMR control service: Flexible Sleep (mpi4py), or
Jacobi in C or Fortran (libdmr, built for the run).

1. FS starts on 1 node of an idle cluster and grows to its maximum (wide optimization: free nodes,
   nobody waiting);  2. the rest of the cluster is filled and a rigid job is queued that cannot
   start;  3. FS shrinks at its next step, the rigid job gets top priority and the freed nodes;
4. FS finishes with its state intact (checksum), Jacobi with the grid one rank computes alone.
Every resize is a real Slurm resize.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from dmr_apps import build, script
from slurm_ext.backend import EXPANDER_PREFIX, RESIZER_PREFIX, JobRequest
from slurm_ext.demo.resize import wait_until
from slurm_ext.partitions import partition_view
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, Server, ServiceOptions
from slurm_ext.service.controller import fold_expanders
from slurm_ext.slurm import SlurmCluster

FS_APP = script("fs")
APPS = ("python", "c", "fortran")
WHOLE = "--exclusive"  # whole nodes, also where Slurm shares them (cons_tres)
Say = Callable[[str], None]


def app_command(app: str, work: Path, max_ranks: int, state_mb: int, say: Say) -> tuple[str, str]:
    """(what the job runs under dmr-run, its result line's prefix): FS, or Jacobi built now."""
    if app == "python":
        args = f"--steps 30 --step-seconds 8 --state-mb {state_mb} --max {max_ranks}"
        return f"{sys.executable} {FS_APP} {args}", "FS_RESULT "
    from dmr.toolchain import build_library, library

    if not library().exists():  # a source checkout pip did not build (the dockerized cluster's)
        say("libdmr is not built here: building it for this Python")
        os.environ["DMR_LIBDIR"] = str(build_library(work / "lib").parent)
    prog = build("jacobi", app, work)
    say(f"built Jacobi in {app}: {prog}")
    return f"{prog} --n 256 --steps 30 --sweeps 20 --max {max_ranks} --model-seconds 8", "JACOBI_RESULT "


def verdict(result: dict) -> str:
    """FS checks its state's checksum, Jacobi its grid against one rank's."""
    if "checksum_ok" in result:
        return f"state checksum {'intact' if result['checksum_ok'] else 'CORRUPTED'}"
    return f"grid {'equal to' if result['ok'] else 'DIFFERENT from'} one rank's"


def _size(slurm: SlurmCluster, job_id: int) -> tuple[str, int, str]:
    """State, node count and nodes of a job, counting the nodes of its expander jobs as its own."""
    job = fold_expanders(slurm.snapshot()).job(job_id)
    return ("GONE", 0, "") if job is None else (job.state.value, job.node_count, ",".join(job.nodes))


def free_nodes(slurm: SlurmCluster, partition: str = "") -> int:
    """Idle nodes of ``partition`` (of the whole cluster if "")."""
    return partition_view(slurm.snapshot(), partition).free


def malleable_demo(
    slurm: SlurmCluster,
    say: Say,
    max_nodes: int = 4,
    state_mb: int = 256,
    ppn: int = 2,
    strategy: str = "auto",
    host: str = "127.0.0.1",
    workdir: Path | None = None,
    app: str = "python",
    user: str | None = None,
    partition: str = "",
) -> dict:
    """Run the scenario above, narrating it; returns the app's own result (sizes, its check: ``ok``)
    and ``job_id``.

    The app (``app``: python for FS, c or fortran for Jacobi) runs under ``dmr-run`` with ``ppn``
    ranks per node; ``strategy``: how the service grows it.
    ``host``: the address the nodes reach the service at; ``workdir``: where the job script and its
    output go (a directory the nodes share, when they are other machines or containers).
    ``user``: who submits the app and the other jobs (the service stays this process's user, root).
    ``partition``: where the jobs go (Slurm's default partition); its nodes are the ones counted.
    Every job asks for whole nodes (``--exclusive``), as malleable jobs must where nodes are shared
    (``select/cons_tres``).
    """
    if free_nodes(slurm, partition) < max_nodes + 1:  # the app at its largest and a filler job
        raise RuntimeError(f"the demo needs {max_nodes + 1} idle nodes")
    work = Path(tempfile.mkdtemp(prefix="dmr-demo-", dir=workdir))
    mine = slurm if user is None else slurm.as_user(user)  # the jobs' owner
    if user is not None:
        shutil.chown(work, user)  # the app writes its output there
    options = ServiceOptions(expand_timeout=5, snapshot_interval=0.5, expand_strategy=strategy,
                             events_path=work / "events.jsonl")  # fmt: skip
    ctl = Controller(slurm, DMRPolicy(), options)
    server = Server(ctl, host=host, port=0)
    server.start()
    host, port = server.address
    say(f"control service listening on {host}:{port} (policy dmr, expand strategy {ctl.strategy})")
    say(f"the app's script, its output and the service's events go to {work}")
    command, prefix = app_command(app, work, max_nodes * ppn, state_mb, say)
    script = work / "app.sh"
    script.write_text(
        f"#!/bin/bash\nexport DMR_SERVICE={host}:{port}\n{sys.executable} -m dmr --ppn {ppn} -- {command}\n"
    )
    out = work / "app.out"
    name = "FS" if app == "python" else f"Jacobi ({app})"
    submitted: list[int] = []
    try:
        fs = mine.submit(
            JobRequest(
                nodes=1,
                name="fs" if app == "python" else f"jacobi-{app}",
                time_limit=600,
                script=str(script),
                extra_args=("-o", str(out), f"--ntasks-per-node={ppn}", WHOLE),
            )
        )
        submitted.append(fs)
        state = f", {state_mb} MiB of state" if app == "python" else ""
        whose = "" if user is None else f" as {user}"
        say(
            f"submitted {name} (job {fs}){whose} on 1 node, {ppn} ranks per node, malleable between 1 and "
            f"{max_nodes} nodes{state}"
        )
        seen: tuple[str | None, int, str] = (None, 0, "")

        def report() -> tuple[str, int, str]:
            nonlocal seen
            now = _size(slurm, fs)
            if now[:2] != seen[:2]:
                say(
                    f"  {name} job {fs}: "
                    + ("finished" if now[0] == "GONE" else f"{now[0]} on {now[1]} node(s) {now[2]}")
                )
            seen = now
            return now

        wait_until(lambda: report()[1] == max_nodes, 90, f"{name} to grow to {max_nodes} nodes")
        filler = mine.submit(
            JobRequest(
                nodes=free_nodes(slurm, partition),
                name="filler",
                time_limit=600,
                command="sleep 600",
                extra_args=("-o", "/dev/null", WHOLE),
            )
        )
        submitted.append(filler)
        wait_until(lambda: _size(slurm, filler)[0] == "RUNNING", 60, "the filler job to start")
        rigid = mine.submit(
            JobRequest(
                nodes=max_nodes // 2,
                name="rigid",
                time_limit=600,
                command="sleep 20",
                extra_args=("-o", "/dev/null", WHOLE),
            )
        )
        submitted.append(rigid)
        say(
            f"cluster full; queued rigid job {rigid} needing {max_nodes // 2} nodes: {_size(slurm, rigid)[0]}"
        )
        # Slurm 22.05 may stall scheduling 20-40 s after a resize (docs/admin/slurm.md), a loaded host more
        wait_until(lambda: report() and _size(slurm, rigid)[0] == "RUNNING", 180, "the rigid job to start")
        fs_state = report()
        say(f"  rigid job {rigid}: RUNNING on {_size(slurm, rigid)[2]}; {name} now on {fs_state[1]} node(s)")
        mine.cancel(filler)
        wait_until(lambda: report()[0] == "GONE", 300, f"{name} to finish")
        text = out.read_text(errors="replace")  # a rank killed mid-write may leave a stray byte
        line = next((ln for ln in text.splitlines() if ln.startswith(prefix)), None)
        if line is None:
            raise RuntimeError(f"{name} printed no result; see {out}")
        result = json.loads(line.removeprefix(prefix))
        resizes = ", ".join(f"{r[1]} {r[2]}->{r[3]}" for r in result["resizes"])
        say(f"{name} finished: {len(result['resizes'])} resizes ({resizes}), {verdict(result)}")
        return {**result, "ok": result.get("ok", result.get("checksum_ok")), "job_id": fs}
    finally:
        live = {j.job_id for j in slurm.snapshot().jobs}
        for job_id in submitted:
            if job_id in live:
                mine.cancel(job_id)
        server.stop()
        ctl.background.shutdown(wait=True)
        left = [
            j.job_id for j in slurm.snapshot().jobs if j.name.startswith((RESIZER_PREFIX, EXPANDER_PREFIX))
        ]
        say(f"service stopped; resizer or expander jobs left behind: {left or 'none'}")

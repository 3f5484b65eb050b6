"""How a group of ranks is started: one ``srun`` step on one node (or ``mpiexec`` outside Slurm).

The launch spec is what every group of an application runs: the same command, working
directory and environment, ``ppn`` ranks per group. The environment is the user's, without
the variables of the process that holds it (its Slurm step, its PMI connection, its DMR
group), so that a launch from a batch script, from a rank or from another job all start the
same program the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

LAUNCH_TOKEN = "launch"  # the token of the groups started with the application
# seconds the other groups get to end on their own after one failed (an app that ends with an
# error on every rank ends by itself; one whose ranks wait for a dead peer is stopped)
FAIL_GRACE = float(os.environ.get("DMR_FAIL_GRACE", "5"))

# Per-process variables that must not leak into a new step: Slurm's step/allocation view (a
# stale SLURM_NNODES makes srun refuse a step), the PMI connection of the launching rank,
# and this package's own per-group settings.
_DROP_PREFIXES = ("SLURM_", "PMI_", "PMIX_", "HYDRA_", "MPI_LOCAL", "OMPI_", "DMR_GROUP_", "DMR_AGENT")
_DROP = {"DMR_TOKEN", "DMR_LAUNCH_GROUPS", "DMR_NODE", "DMR_PILOT", "DMR_APP_ID", "DMR_RESTORE"}
_KEEP = {"SLURM_CONF"}

# An EJB subjob's Slurm job name, ``ejb<J0>.<key>``: which application (J0, its placeholder's job
# id) a job serves, readable in squeue. The EJB manager names subjobs so and finds its own by it
# after a restart; a placeholder finds the subjobs that may host its application by it.
SUBJOB_NAME = re.compile(r"ejb(\d+)\.(\d+)")


def subjob_name(eid: int, key: int) -> str:
    """The job name of subjob ``key`` of the application whose placeholder is job ``eid``."""
    return f"ejb{eid}.{key}"


# A spare, ``ejb<J0>.spare<i>``: a held subjob ejb-submit queued as its owner for a manager that cannot
# submit jobs as another user (not root); the manager renames it ``ejb<J0>.<key>`` when it uses it.
SPARE_NAME = re.compile(r"ejb(\d+)\.spare(\d+)")


def spare_name(eid: int, index: int) -> str:
    """The job name of spare ``index`` of the application whose placeholder is job ``eid``."""
    return f"ejb{eid}.spare{index}"


def is_spare_of(name: str, eid: int) -> bool:
    """Whether a job named ``name`` is a spare of the application of placeholder ``eid``."""
    m = SPARE_NAME.fullmatch(name)
    return m is not None and int(m.group(1)) == eid


def is_subjob_of(name: str, eid: int) -> bool:
    """Whether a job named ``name`` is a subjob of the application of placeholder ``eid``."""
    m = SUBJOB_NAME.fullmatch(name)
    return m is not None and int(m.group(1)) == eid


def clean_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the launching process's own Slurm/PMI/DMR-group variables."""
    return {
        k: v for k, v in env.items() if k in _KEEP or (k not in _DROP and not k.startswith(_DROP_PREFIXES))
    }


@dataclass(frozen=True)
class LaunchSpec:
    """What each group runs: ``argv`` in ``cwd`` with ``env``, ``ppn`` ranks per group."""

    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    ppn: int = 1
    mpi: str = "pmi2"
    overcommit: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LaunchSpec:
        return cls(
            argv=[str(a) for a in raw["argv"]],
            cwd=str(raw["cwd"]),
            env={str(k): str(v) for k, v in raw.get("env", {}).items()},
            ppn=int(raw.get("ppn", 1)),
            mpi=str(raw.get("mpi", "pmi2")),
            overcommit=bool(raw.get("overcommit", False)),
        )


def start_group(
    spec: LaunchSpec, job_id: int | None, node: str, dmr_env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start one group of ``spec.ppn`` ranks on ``node`` of Slurm job ``job_id``.

    Outside Slurm (``job_id`` None) the group is an ``mpiexec`` on this host and ``node`` only
    a name (the local backend the MPI tests use). Output goes where the caller's goes.
    """
    env = {**clean_env(spec.env), **dmr_env, "DMR_NODE": node}
    if os.environ.get("SLURM_CONF"):
        env["SLURM_CONF"] = os.environ["SLURM_CONF"]  # the cluster this launcher runs in
    if job_id is None:
        mpiexec = shutil.which("mpiexec") or "mpiexec"
        cmd = [mpiexec, "-n", str(spec.ppn), *spec.argv]
    else:
        cmd = [
            shutil.which("srun") or "srun",
            f"--mpi={spec.mpi}",
            f"--jobid={job_id}",
            "-N1",
            f"-n{spec.ppn}",
            f"--nodelist={node}",
            f"--job-name=dmr-group-{node}",
            "--kill-on-bad-exit=1",  # a rank that dies takes its group down: its agent sees it end
            *(["--overcommit"] if spec.overcommit else []),
            *spec.argv,
        ]
    return subprocess.Popen(cmd, cwd=spec.cwd, env=env)


def note_end(
    proc: subprocess.Popen[bytes], ended_at: dict[int, float], lock: threading.Lock | threading.Condition
) -> None:
    """Note in ``ended_at`` (pid -> monotonic time) when ``proc`` ends, the moment it does (a thread
    waits on it): a dead rank's peers may crash in MPI a moment later, before anyone looks, and the
    group that ended first is the one that failed."""

    def wait() -> None:
        proc.wait()
        with lock:
            ended_at.setdefault(proc.pid, time.monotonic())
            if isinstance(lock, threading.Condition):
                lock.notify_all()

    threading.Thread(target=wait, daemon=True).start()


def first_ended(procs: list[subprocess.Popen[bytes]], ended_at: dict[int, float]) -> subprocess.Popen[bytes]:
    """Of ``procs``, the one that ended first (one not noted yet counts as ending now; ties: list order)."""
    now = time.monotonic()
    return min(procs, key=lambda p: ended_at.get(p.pid, now))


def group_failed(node: str, job_id: int | None, code: int) -> str:
    """'the group on n3 of job 66 ended with exit code 143' (no job outside Slurm)."""
    return f"the group on {node}{'' if job_id is None else f' of job {job_id}'} {ended(code)}"


def ended(code: int) -> str:
    """How a group's launcher ended, in words (srun's own lines above it say which task and how)."""
    if code < 0:
        return f"was killed by signal {-code} ({signal.Signals(-code).name})"
    return f"ended with exit code {code}"


def exit_code(code: int) -> int:
    """A shell's exit code for a launcher's return code (a signal ``n`` is 128 + n)."""
    return 128 - code if code < 0 else code

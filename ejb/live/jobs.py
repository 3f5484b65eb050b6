"""The sbatch command lines EJB writes: the placeholder ``J0`` and the subjobs (pure functions).

Every job of a bundled application runs the user's own batch script with the user's own sbatch
options; EJB only sets the shape (nodes, time limit), the name, the output and error files (every
job appends to ``J0``'s, so the user reads one file each) and ``DMR_PILOT``, which turns ``dmr-run`` in the
script into that job's EJB worker (:mod:`dmr.pilot`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from dmr.launch import spare_name
from slurm_ext.model import Job

# sbatch's short options and the long names EJB reads them as
LONG = {"-N": "nodes", "-n": "ntasks", "-c": "cpus-per-task", "-t": "time", "-p": "partition",
        "-J": "job-name", "-o": "output", "-e": "error", "-A": "account", "-q": "qos", "-D": "chdir",
        "-d": "dependency", "-H": "hold", "-W": "wait", "-s": "oversubscribe"}  # fmt: skip
# options a subjob gets from EJB instead of the user (its shape, name, files, whole nodes; no blocking
# or holding), and the user's that are J0's alone: one array, one dependency, one begin time, one mail
SET_BY_EJB = {"nodes", "ntasks", "ntasks-per-node", "time", "job-name", "output", "error", "open-mode",
              "parsable", "wait", "hold", "test-only", "export", "wrap", "exclusive", "oversubscribe",
              "array", "dependency", "begin", "mail-type", "mail-user", "requeue", "no-requeue"}  # fmt: skip


def long_name(name: str) -> str:
    return LONG.get(name, name.lstrip("-"))


Options = list[list[str | None]] | list[tuple[str, str | None]]  # (name as typed, value; None: a flag)


def words(options: Options, drop: set[str]) -> list[str]:
    """sbatch words for (name, value) pairs, without the ``drop``-ped."""
    out: list[str] = []
    for name, value in options:
        assert name is not None
        if long_name(name) in drop:
            continue
        if value is None:
            out.append(name)
        elif name.startswith("--"):
            out.append(f"{name}={value}")
        else:
            out += [name, value]
    return out


PILOT_VAR = "DMR_PILOT"  # host:port:secret:role, in sbatch's environment (:func:`pilot_env`)


def with_pilot(export: str | None) -> str:
    """The ``--export`` value that passes :data:`PILOT_VAR` on with what the user asked to export.
    ``ALL`` (the default) stays as it is: any other value makes slurmd load the user's login
    environment into the job (sbatch sets SLURM_GET_USER_ENV), which the user's own sbatch would not."""
    if export is None or export.strip().upper() == "ALL":
        return "ALL"
    if export.strip().upper() == "NONE":
        return PILOT_VAR  # a list without ALL exports only what it names (and SLURM_*), as NONE does
    return f"{export},{PILOT_VAR}"


def pilot_env(env: Mapping[str, str], pilot: str) -> dict[str, str]:
    """The environment sbatch runs in for a job of EJB's: ``env`` and the job's pilot."""
    return {**env, PILOT_VAR: pilot}


def export_of(options: Options) -> str | None:
    found = [v for n, v in options if n is not None and long_name(n) == "export"]
    return found[-1] if found else None


def j0_argv(options: Options, script: list[str]) -> list[str]:
    """``J0``: the job as the user typed it, appending to its output, its dmr-run a pilot (run sbatch
    in :func:`pilot_env`)."""
    keep = words(options, {"export", "open-mode", "parsable", "wrap"})
    return ["sbatch", "--parsable", *keep, "--open-mode=append", f"--export={with_pilot(export_of(options))}",
            *script]  # fmt: skip


def subjob_argv(
    options: Options,
    script: list[str],
    nodes: int,
    limit: float,
    name: str,
    output: str,
    error: str = "",
    hold: bool = False,
) -> list[str]:
    """A subjob: the user's options and script, EJB's shape on whole nodes, ``J0``'s output (and
    error) file, a pilot (run sbatch in :func:`pilot_env`); ``hold``: queued held (a spare, released
    by the manager when it uses it)."""
    minutes = max(1, math.ceil(limit / 60)) if math.isfinite(limit) else None
    # --mail-type=NONE and --no-requeue also override what #SBATCH lines of the script ask for;
    # --exclusive: EJB over-subscribes a subjob's nodes, so it needs them whole where Slurm shares nodes
    args = ["sbatch", "--parsable", *words(options, SET_BY_EJB), "-N", str(nodes), f"--ntasks={nodes}",
            "--ntasks-per-node=1", "--exclusive", f"--job-name={name}", "--open-mode=append",
            "--mail-type=NONE", "--no-requeue"]  # fmt: skip
    if minutes is not None:
        args.append(f"--time={minutes}")
    if output:
        args.append(f"--output={output}")
    if error:
        args.append(f"--error={error}")
    args.append(f"--export={with_pilot(export_of(options))}")
    if hold:
        args.append("--hold")
    return [*args, *script]


def spare_argv(options: Options, script: list[str], j0: int, index: int, limit: float, output: str,
               error: str) -> list[str]:  # fmt: skip
    """Spare ``index`` of ``j0``'s job: a held one-node subjob, named as a spare (queued as the
    owner by ejb-submit, or later by a pilot of the job, for a manager that cannot submit as them)."""
    return subjob_argv(options, script, 1, limit, spare_name(j0, index), output, error, hold=True)


NOT_AN_ARRAY_TASK = 4294967294  # what Slurm 22.05 writes for %a in a job that is no array task
MAX_WIDTH = 10  # Slurm pads numbers to at most 10 digits (%12j is %10j)


@dataclass(frozen=True)
class BatchFacts:
    """What sbatch fills an output pattern with for a job's batch step."""

    job_id: int
    name: str
    user: str
    host: str  # the batch host's short name (%N)


def expand_pattern(pattern: str, facts: BatchFacts) -> str:
    """``pattern`` with Slurm's file name codes filled in as the batch step of ``facts``'s job has them.

    As slurmd does (checked on Slurm 22.05): ``%%`` is ``%``; ``%j %J %A`` the job id, ``%a``
    4294967294 (no array task), ``%n %t`` 0, ``%s`` ``batch``, ``%N`` the host, ``%u`` the user,
    ``%x`` the job name; digits after ``%`` zero-pad a number (at most 10). An unknown code stays
    as typed (``%b``), but without its ``%`` when it has digits (``%5b`` is ``5b``).
    """
    job = facts.job_id
    numbers = {"j": job, "J": job, "A": job, "a": NOT_AN_ARRAY_TASK, "n": 0, "t": 0}
    words = {"s": "batch", "N": facts.host, "u": facts.user, "x": facts.name}
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] != "%":
            out.append(pattern[i])
            i += 1
            continue
        if pattern.startswith("%%", i):
            out.append("%")
            i += 2
            continue
        end = i + 1
        while end < len(pattern) and pattern[end] in "0123456789":
            end += 1
        digits, code = pattern[i + 1 : end], pattern[end : end + 1]
        if code in numbers:
            width = min(int(digits), MAX_WIDTH) if digits else 0
            out.append(str(numbers[code]).zfill(width))
        elif code in words:
            out.append(words[code])
        else:  # not a code: the text after the % stays
            out.append(digits or "%")
            i = end
            continue
        i = end + 1
    return "".join(out)


def names_host(pattern: str) -> bool:
    """Whether ``pattern`` has the batch host in it (``%N``)."""
    return "\0" in expand_pattern(pattern, BatchFacts(0, "", "", "\0"))


def batch_file(pattern: str, workdir: str, facts: BatchFacts) -> str:
    """The file a batch job's ``-o``/``-e`` ``pattern`` names: filled in, relative to its work directory."""
    return os.path.join(workdir, expand_pattern(pattern, facts))


def output_of(pattern: str, j0: Job) -> str:
    """J0's output file from Slurm's StdOut (``%j %x %u %A`` already filled in by slurmctld).

    For an ejb-submit that does not send the user's own pattern; its host is unknown (``%N``).
    """
    return expand_pattern(pattern, BatchFacts(j0.job_id, j0.name, j0.user, j0.batch_host or "%N"))

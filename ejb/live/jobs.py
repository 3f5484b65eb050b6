"""The sbatch command lines EJB writes: the placeholder ``J0`` and the subjobs (pure functions).

Every job of a bundled application runs the user's own batch script with the user's own sbatch
options; EJB only sets the shape (nodes, time limit), the name, the output (every job appends to
``J0``'s file, so the user reads one file) and ``DMR_PILOT``, which turns ``dmr-run`` in the
script into that job's EJB worker (:mod:`dmr.pilot`).
"""

from __future__ import annotations

import math

from slurm_ext.model import Job

# sbatch's short options and the long names EJB reads them as
LONG = {"-N": "nodes", "-n": "ntasks", "-c": "cpus-per-task", "-t": "time", "-p": "partition",
        "-J": "job-name", "-o": "output", "-e": "error", "-A": "account", "-q": "qos", "-D": "chdir",
        "-d": "dependency", "-H": "hold", "-W": "wait"}  # fmt: skip
# options a subjob gets from EJB instead of the user (its shape, name, output; no blocking or holding),
# and the user's that are J0's alone: one array, one dependency, one begin time, one mail per job
SET_BY_EJB = {"nodes", "ntasks", "ntasks-per-node", "time", "job-name", "output", "open-mode",
              "parsable", "wait", "hold", "test-only", "export", "wrap",
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


def with_pilot(export: str | None, pilot: str) -> str:
    """The ``--export`` value that adds ``DMR_PILOT`` to what the user asked to export."""
    var = f"DMR_PILOT={pilot}"
    if export is None or export.strip().upper() == "ALL":
        return f"ALL,{var}"
    if export.strip().upper() == "NONE":
        return var  # a list without ALL exports only what it names (and SLURM_*), as NONE does
    return f"{export},{var}"


def export_of(options: Options) -> str | None:
    found = [v for n, v in options if long_name(n) == "export"]
    return found[-1] if found else None


def j0_argv(options: Options, script: list[str], pilot: str) -> list[str]:
    """``J0``: the job as the user typed it, appending to its output, its dmr-run a pilot."""
    keep = words(options, {"export", "open-mode", "parsable", "wrap"})
    return ["sbatch", "--parsable", *keep, "--open-mode=append",
            f"--export={with_pilot(export_of(options), pilot)}", *script]  # fmt: skip


def subjob_argv(
    options: Options,
    script: list[str],
    nodes: int,
    limit: float,
    name: str,
    output: str,
    pilot: str,
) -> list[str]:
    """A subjob: the user's options and script, EJB's shape, ``J0``'s output, a pilot."""
    minutes = max(1, math.ceil(limit / 60)) if math.isfinite(limit) else None
    # --mail-type=NONE and --no-requeue also override what #SBATCH lines of the script ask for
    args = ["sbatch", "--parsable", *words(options, SET_BY_EJB), "-N", str(nodes), f"--ntasks={nodes}",
            "--ntasks-per-node=1", f"--job-name={name}", "--open-mode=append", "--mail-type=NONE",
            "--no-requeue"]  # fmt: skip
    if minutes is not None:
        args.append(f"--time={minutes}")
    if output:
        args.append(f"--output={output}")
    args.append(f"--export={with_pilot(export_of(options), pilot)}")
    return [*args, *script]


def output_of(pattern: str, j0: Job) -> str:
    """J0's output file with sbatch's per-job patterns filled in as for J0 (subjobs append to it)."""
    for code, value in (("%%", "\0"), ("%j", str(j0.job_id)), ("%J", str(j0.job_id)), ("%A", str(j0.job_id)),
                        ("%x", j0.name), ("%u", j0.user)):  # fmt: skip
        pattern = pattern.replace(code, value)
    return pattern.replace("\0", "%")

"""An expander job submitted by the application's agent, on the control service's word.

Only root may submit a job as another user, so a service run as an unprivileged operator (the
site's way) cannot submit the second job that hosts a grown application's new ranks. The
application's agent can: it runs as the job's owner. The service sends the ``sbatch`` options it
chose (``SlurmCluster.expander_options``: nodes, the job's partition, account and QoS, time, its
output file); the agent accepts only those options, named after its own job, and runs its own
command in the new job (``python -m dmr join`` to itself), never one it is sent.
"""

from __future__ import annotations

import os
import subprocess
import sys

from slurm_ext.backend import expander_command, expander_name

# options that take the next word as their value, and whole options (``--name=value`` ones by prefix)
_VALUED = ("-N", "-J", "-p", "-A", "-q", "-t")
_WHOLE = ("--exclusive", "--open-mode=append", "--output=/dev/null")
_PREFIXED = ("--chdir=", "--output=")
# the batch script's environment that is this job's, not the user's: it must not leak into the new job
_JOB_ENV = ("SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "PMI_", "PMIX_", "HYDRA_", "MPIR_", "DMR_")


def check_options(options: list[str], job_id: int | None) -> str | None:
    """Why ``options`` are not an expander job's of job ``job_id``, or None if they are."""
    if job_id is None:
        return "this agent is not in a Slurm job"
    named = False
    i = 0
    while i < len(options):
        opt = options[i]
        if opt in _VALUED:
            if i + 1 >= len(options):
                return f"{opt} needs a value"
            value = options[i + 1]
            if opt == "-J":
                if value != expander_name(job_id):
                    return f"the job must be named {expander_name(job_id)}, not {value!r}"
                named = True
            i += 2
            continue
        if opt not in _WHOLE and not opt.startswith(_PREFIXED):
            return f"option {opt!r} is not an expander job's"
        i += 1
    return None if named else "the expander job is not named (-J)"


def job_environment() -> dict[str, str]:
    """This process's environment less the job's own variables (Slurm's, MPI's, the agent's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_JOB_ENV)}
    if "SLURM_CONF" in os.environ:
        env["SLURM_CONF"] = os.environ["SLURM_CONF"]
    return env


def submit(job_id: int | None, agent: str, token: str, options: list[str]) -> dict[str, object]:
    """Submit the expander job for expansion ``token`` (the agent's reply: ``job_id`` or an error)."""
    why = check_options(options, job_id)
    if why is not None:
        return {"ok": False, "error": f"refused: {why}"}
    argv = ["sbatch", "--parsable", *options, "--wrap", expander_command(sys.executable, agent, token)]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=job_environment())
    except (OSError, subprocess.SubprocessError) as exc:
        return {"ok": False, "error": f"sbatch: {exc}"}
    if res.returncode != 0:
        return {"ok": False, "error": f"sbatch: {res.stderr.strip() or res.returncode}"}
    try:
        return {"ok": True, "job_id": int(res.stdout.strip().split(";")[0])}
    except ValueError:
        return {"ok": False, "error": f"sbatch printed {res.stdout.strip()!r}"}

"""ejb-submit beside sbatch on batch scripts of the shapes people have: each is submitted once with
sbatch and once with ejb-submit (the EJB manager down), and the two jobs Slurm records must match
field by field (ids and times aside); a script sbatch rejects is rejected with the same message and
nothing is submitted. The cluster is held full by one job meanwhile, so every job stays pending.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm

BASH = "#!/bin/bash\n"
# (name, sbatch options, script body); "{dep}" becomes the id of the job that holds the cluster
CORPUS: list[tuple[str, list[str], str]] = [
    ("single-node", [], BASH + "#SBATCH -N 1\n#SBATCH -t 10\nsrun hostname\n"),
    (
        "multi-node-mpi",
        [],
        BASH + "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --time=00:30:00\n"
        "module load mpi 2>/dev/null\nsrun --mpi=pmi2 ./a.out\n",
    ),
    ("ntasks-cpus", ["-n", "4", "-c", "1"], BASH + "srun ./a.out\n"),
    ("array-throttle", ["--array=1-10%2"], BASH + "#SBATCH -N 1\necho $SLURM_ARRAY_TASK_ID\n"),
    (
        "array-directive",
        [],
        BASH + "#SBATCH --array=0-3\n#SBATCH -o out-%A_%a.txt\necho $SLURM_ARRAY_TASK_ID\n",
    ),
    ("array-step", ["-a", "1-9:2"], BASH + "echo hi\n"),
    ("dependency-several", ["--dependency=afterok:{dep}:{dep}"], BASH + "echo after\n"),
    ("dependency-short", ["-d", "afterany:{dep}"], BASH + "echo after\n"),
    ("dependency-directive", [], BASH + "#SBATCH --dependency=after:{dep}\necho after\n"),
    ("het-command-line", ["-N", "2", ":", "-N", "1"], BASH + "srun hostname\n"),
    ("het-hetjob", [], BASH + "#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH -N 1\nsrun hostname\n"),
    ("het-packjob", [], BASH + "#SBATCH -N 1 -t 5\n#SBATCH packjob\n#SBATCH -N 1 -t 5\nsrun hostname\n"),
    ("wrap", ["-N", "2", "--wrap", "srun hostname"], ""),
    ("wrap-equals", ["--wrap=sleep 5", "-t", "1"], ""),
    ("sh-shebang", [], "#!/bin/sh\n#SBATCH -J sh-job\nhostname\n"),
    ("csh-shebang", [], "#!/bin/csh\n#SBATCH -J csh-job\nsetenv X 1\nhostname\n"),
    ("tcsh-shebang", [], "#!/bin/tcsh\n#SBATCH --job-name tcsh-job\nhostname\n"),
    ("python-shebang", [], "#!/usr/bin/env python3\n#SBATCH -N 1\n#SBATCH -t 5\nprint('hi')\n"),
    ("inline-comments", [], BASH + "#SBATCH -N 2  # two nodes\n#SBATCH -t 7 # minutes\nsrun hostname\n"),
    ("tabs", [], BASH + "#SBATCH\t-N\t2\n#SBATCH\t--job-name=\ttabbed\nsrun hostname\n"),
    ("crlf", [], "#!/bin/bash\r\n#SBATCH -N 1\r\nhostname\r\n"),
    ("directive-after-command", [], BASH + "#SBATCH -N 1\necho start\n#SBATCH -N 3\n#SBATCH -J late\n"),
    (
        "comments-and-blanks",
        [],
        BASH + "\n# set up\n\n#SBATCH -N 2\n   # indented comment\n#SBATCH -J c\nhostname\n",
    ),
    ("abbreviated", ["--job-na=abbr", "--ntasks-per-n=1", "--nod=1"], BASH + "hostname\n"),
    ("abbreviated-unique", ["--job-na=abbr", "--ntasks-per-n=1", "--nodes=1"], BASH + "hostname\n"),
    ("time-minutes", ["-t", "90"], BASH + "hostname\n"),
    ("time-m-s", ["--time=5:30"], BASH + "hostname\n"),
    ("time-h-m-s", ["--time=1:02:03"], BASH + "hostname\n"),
    ("time-d-h", ["--time=1-2"], BASH + "hostname\n"),
    ("time-d-h-m", ["--time=1-02:30"], BASH + "hostname\n"),
    ("time-d-h-m-s", [], BASH + "#SBATCH --time=2-03:04:05\nhostname\n"),
    ("get-user-env", ["--get-user-env"], BASH + "hostname\n"),
    ("propagate", ["--propagate"], BASH + "hostname\n"),
    ("reboot", ["--reboot"], BASH + "hostname\n"),
    ("x11", ["--x11"], BASH + "hostname\n"),
    (
        "mail-requeue",
        ["--mail-type=END,FAIL", "--mail-user=someone@example.org", "--requeue"],
        BASH + "hostname\n",
    ),
    ("begin-hold", ["--begin=now+1hour", "-H"], BASH + "hostname\n"),
    ("output-patterns", ["-o", "%x-%j-%u.out", "-e", "%x-%j.err", "-J", "pat"], BASH + "hostname\n"),
    ("export-none", ["--export=NONE", "--comment", "a comment"], BASH + "hostname\n"),
    ("exclusive-mem", ["--exclusive", "--mem=100", "--nice=10"], BASH + "hostname\n"),
    ("parsable-chdir", ["--parsable", "-D", "/tmp"], BASH + "pwd\n"),
    ("more-tasks-than-cpus", ["-n", "16", "-N", "2"], BASH + "srun hostname\n"),
    ("too-many-nodes", ["-N", "99"], BASH + "hostname\n"),
    ("bad-partition", ["-p", "no-such-partition"], BASH + "hostname\n"),
    ("unknown-option", ["--no-such-option"], BASH + "hostname\n"),
    ("bad-time", ["-t", "soon"], BASH + "hostname\n"),
]
# fields that must differ between two submissions of the same job
VARYING = {"JobId", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime", "Deadline",
           "LastSchedEval", "Priority", "Reason", "RunTime", "TimeLeft", "ArrayJobId", "HetJobId",
           "HetJobIdSet", "HetJobOffset", "SuspendTime", "SecsPreSuspend", "PreemptEligibleTime",
           "Scheduler", "SchedNodeList"}  # fmt: skip


def _env(slurm) -> dict[str, str]:  # noqa: ANN001
    env = {**slurm.cmd.env, "EJB_MANAGER": "127.0.0.1:1"}  # the manager down
    return {k: v for k, v in env.items() if not k.startswith(("SBATCH_", "SLURM_JOB"))}


def _submit(cmd: str, argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cmd, *argv], capture_output=True, text=True, timeout=60, cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def _job_ids(out: str) -> list[int]:
    found = re.search(r"(\d+)", out)
    return [int(found.group(1))] if found else []


def _record(slurm, job_id: int) -> dict[str, str]:  # noqa: ANN001
    """Every field of every component of the job, the components' ids in values replaced by ``ID``."""
    out = slurm.cmd.run(["scontrol", "show", "job", "-o", str(job_id)]).stdout
    ids = re.findall(r"\bJobId=(\d+)", out)
    fields: dict[str, str] = {}
    for n, line in enumerate(out.splitlines()):
        for key, value in re.findall(r"(\w+)=((?:[^ =]| (?!\w+=))*)", line):
            if key not in VARYING:
                for own in ids:
                    value = re.sub(rf"(?<!\d){own}(?!\d)", "ID", value)
                fields[f"{n}.{key}"] = value.strip()
    return fields


@pytest.fixture
def held(slurm, jobs, local_cluster) -> int:  # noqa: ANN001
    """A job that holds every node: what the corpus submits stays pending."""
    blocker = jobs.submit(local_cluster.cfg.nodes, name="blocker")
    jobs.wait_running(blocker)
    return blocker


def test_the_corpus_gives_the_same_jobs_through_ejb_submit_as_through_sbatch(slurm, jobs, held, tmp_path):
    env = _env(slurm)
    mismatches: list[str] = []
    for name, options, body in CORPUS:
        argv = [o.replace("{dep}", str(held)) for o in options]
        if body:
            path = tmp_path / f"{name}.sh"
            path.write_text(body.replace("{dep}", str(held)))
            argv += [str(path)]
        runs = {}
        for cmd in ("sbatch", "ejb-submit"):
            res = _submit(cmd, argv, tmp_path, env)
            ids = _job_ids(res.stdout) if res.returncode == 0 else []
            jobs.ids.extend(ids)
            runs[cmd] = (res, ids)
        (plain, plain_ids), (ours, our_ids) = runs["sbatch"], runs["ejb-submit"]
        if plain.returncode != ours.returncode:
            mismatches.append(f"{name}: sbatch exit {plain.returncode}, ejb-submit exit {ours.returncode}: "
                              f"{ours.stderr.strip()[-300:]}")  # fmt: skip
            continue
        if plain.returncode != 0:  # the same verdict, in sbatch's words
            if plain.stderr.strip() not in ours.stderr:
                mismatches.append(
                    f"{name}: sbatch said {plain.stderr.strip()!r}, ejb-submit {ours.stderr.strip()!r}"
                )
            continue
        if plain.stdout.replace(str(plain_ids[0]), "ID") != ours.stdout.replace(str(our_ids[0]), "ID"):
            mismatches.append(f"{name}: stdout {plain.stdout!r} vs {ours.stdout!r}")
        a, b = _record(slurm, plain_ids[0]), _record(slurm, our_ids[0])
        diff = {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
        if diff:
            mismatches.append(f"{name}: {diff}")
    assert not mismatches, "\n".join(mismatches)
    assert len(CORPUS) >= 40


def test_a_script_on_standard_input_is_read_by_sbatch(slurm, jobs, held, tmp_path):
    script = "#!/bin/bash\n#SBATCH -J from-stdin\nhostname\n"
    res = subprocess.run(["ejb-submit", "-N", "1"], input=script, capture_output=True, text=True, timeout=60,
                         cwd=tmp_path, env=_env(slurm))  # fmt: skip
    assert res.returncode == 0, res.stderr
    job_id = _job_ids(res.stdout)[0]
    jobs.ids.append(job_id)
    assert slurm.job(job_id).name == "from-stdin"


def test_an_array_job_leaves_exactly_its_tasks_in_the_queue(slurm, jobs, held, tmp_path):
    path = tmp_path / "dmr-array.sh"
    path.write_text("#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node 2\ndmr-run -- python -m dmr_apps.fs\n")
    res = _submit("ejb-submit", ["--array=1-3", str(path)], tmp_path, _env(slurm))
    assert res.returncode == 0 and "a job array" in res.stderr, res.stderr
    job_id = _job_ids(res.stdout)[0]
    jobs.ids.append(job_id)
    out = slurm.cmd.run(["squeue", "-h", "-r", "-o", "%i %j"]).stdout.split("\n")
    mine = [ln for ln in out if ln.startswith(f"{job_id}_")]
    assert sorted(ln.split()[0] for ln in mine) == [f"{job_id}_{i}" for i in (1, 2, 3)], out
    assert len([ln for ln in out if ln.strip()]) == 1 + 3  # the blocker and the three tasks, nothing else
    assert os.environ.get("SBATCH_ARRAY_INX") is None

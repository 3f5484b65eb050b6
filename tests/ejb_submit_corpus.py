"""ejb-submit beside sbatch on batch scripts of the shapes people have: each is submitted once with
sbatch and once with ejb-submit (the EJB manager down), and the two jobs Slurm records must match
field by field (ids and times aside); a script sbatch rejects is rejected with the same message and
nothing is submitted. The caller holds the cluster full by one job meanwhile (its id is ``{dep}``
in the corpus), so every job stays pending.

Shared by the local cluster's test (tests/slurm/test_ejb_submit_corpus.py, :func:`compare` in
process) and each release's containers (tests/docker/test_ejb_submit_corpus.py runs
``python3 -m tests.ejb_submit_corpus`` in the login container, where that release's sbatch is).
Standard library only: the containers' Pythons have nothing of the tests' own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Mapping
from pathlib import Path

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
    # options one release has and another lacks (RELEASE_OPTIONS): each as that release's sbatch does
    ("tres-per-task", ["-n", "2", "--tres-per-task=cpu=1"], BASH + "srun hostname\n"),
    ("tres-bind", [], BASH + "#SBATCH --tres-bind=gres/gpu:closest\nsrun hostname\n"),
    ("oom-kill-step", ["--oom-kill-step"], BASH + "hostname\n"),
    ("oom-kill-step-value", ["--oom-kill-step=1"], BASH + "hostname\n"),
    ("resv-ports", [], BASH + "#SBATCH --resv-ports\nsrun hostname\n"),
    ("container-id", ["--container-id=ctr1"], BASH + "hostname\n"),
    ("container-type", ["--container-type=oci"], BASH + "hostname\n"),
    ("spread-segments", ["--spread-segments"], BASH + "hostname\n"),
    # a prefix unique in one release is ambiguous or unknown in another
    ("abbreviated-spread", ["--spread"], BASH + "hostname\n"),
    ("abbreviated-oom", ["--oom=0"], BASH + "hostname\n"),
    ("abbreviated-tres-per", ["-n", "2", "--tres-per=cpu=1"], BASH + "hostname\n"),
]
# options sbatch --help lists from a release on (22.05 has none of them): the corpus uses each
RELEASE_OPTIONS = {"tres-per-task": "24.11", "tres-bind": "24.11", "oom-kill-step": "24.11",
                   "resv-ports": "24.11", "container-id": "24.11", "container-type": "26.05",
                   "spread-segments": "26.05"}  # fmt: skip
# fields that must differ between two submissions of the same job
VARYING = {"JobId", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime", "Deadline",
           "LastSchedEval", "Priority", "Reason", "RunTime", "TimeLeft", "ArrayJobId", "HetJobId",
           "HetJobIdSet", "HetJobOffset", "SuspendTime", "SecsPreSuspend", "PreemptEligibleTime",
           "Scheduler", "SchedNodeList"}  # fmt: skip
NAMED_BY_ID = {"StdOut", "StdErr", "StdIn"}  # file names sbatch fills the job's id into
UNREAD = "ejb-submit could not read the command line"  # ejb/submit.py: it left the words to sbatch
MANAGER_DOWN = "127.0.0.1:1"  # nothing listens there: ejb-submit leaves every job to sbatch


def corpus_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the EJB manager down and no job options or job context taken from it."""
    env = {**base, "EJB_MANAGER": MANAGER_DOWN}
    return {k: v for k, v in env.items() if not k.startswith(("SBATCH_", "SLURM_JOB"))}


def submit(cmd: str, argv: list[str], cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cmd, *argv], capture_output=True, text=True, timeout=60, cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, check=False)  # fmt: skip


def job_ids(out: str) -> list[int]:
    found = re.search(r"(\d+)", out)
    return [int(found.group(1))] if found else []


def record(job_id: int, env: Mapping[str, str]) -> dict[str, str]:
    """Every field of every component of the job, the components' ids in file names (``%j``, ``%A``
    filled in) replaced by ``ID``."""
    out = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], capture_output=True, text=True,
                         timeout=60, env=env, check=True).stdout  # fmt: skip
    ids = re.findall(r"\bJobId=(\d+)", out)
    fields: dict[str, str] = {}
    for n, line in enumerate(out.splitlines()):
        for key, value in re.findall(r"(\w+)=((?:[^ =]| (?!\w+=))*)", line):
            if key in VARYING:
                continue
            if key in NAMED_BY_ID:  # a whole number in the file's name; the directory's stays as it is
                folder, slash, name = value.rpartition("/")
                for own in ids:
                    name = re.sub(rf"(?<![0-9A-Za-z]){own}(?![0-9A-Za-z])", "ID", name)
                value = folder + slash + name
            fields[f"{n}.{key}"] = value.strip()
    return fields


def queued(workdir: Path, env: Mapping[str, str]) -> set[str]:
    """The ids of the jobs (array tasks one by one) in the queue that were submitted from ``workdir``."""
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i %Z"], capture_output=True, text=True, timeout=60,
                         env=env, check=True).stdout  # fmt: skip
    return {job for job, _, where in (ln.partition(" ") for ln in out.splitlines()) if where == str(workdir)}


def compare(
    workdir: Path,
    dep: int,
    env: Mapping[str, str],
    submitted: list[int],
    verdicts: dict[str, str] | None = None,
) -> list[str]:
    """Submit the corpus from ``workdir`` with sbatch and with ejb-submit; what differs, one line
    per script. The ids of every job submitted are appended to ``submitted`` as they come;
    ``verdicts`` gets sbatch's for each script ("accepted", or what it said)."""
    mismatches: list[str] = []
    for name, options, body in CORPUS:
        argv = [o.replace("{dep}", str(dep)) for o in options]
        if body:
            path = workdir / f"{name}.sh"
            path.write_text(body.replace("{dep}", str(dep)))
            argv += [str(path)]
        before, runs = queued(workdir, env), {}
        for cmd in ("sbatch", "ejb-submit"):
            res = submit(cmd, argv, workdir, env)
            ids = job_ids(res.stdout) if res.returncode == 0 else []
            submitted.extend(ids)
            runs[cmd] = (res, ids)
        (plain, plain_ids), (ours, our_ids) = runs["sbatch"], runs["ejb-submit"]
        if verdicts is not None:
            verdicts[name] = "accepted" if plain.returncode == 0 else plain.stderr.strip()
        if plain.returncode != ours.returncode:
            mismatches.append(f"{name}: sbatch exit {plain.returncode}, ejb-submit exit {ours.returncode}: "
                              f"{ours.stderr.strip()[-300:]}")  # fmt: skip
            continue
        if plain.returncode != 0:  # the same verdict, in sbatch's words, and nothing submitted
            if plain.stderr.strip() not in ours.stderr:
                mismatches.append(
                    f"{name}: sbatch said {plain.stderr.strip()!r}, ejb-submit {ours.stderr.strip()!r}"
                )
            if left := queued(workdir, env) - before:
                mismatches.append(f"{name}: rejected, yet jobs {sorted(left)} are in the queue")
            continue
        if UNREAD in ours.stderr:  # its table of this release's options lacks what sbatch just read
            mismatches.append(f"{name}: sbatch read it, ejb-submit did not: {ours.stderr.strip()[-300:]}")
        if plain.stdout.replace(str(plain_ids[0]), "ID") != ours.stdout.replace(str(our_ids[0]), "ID"):
            mismatches.append(f"{name}: stdout {plain.stdout!r} vs {ours.stdout!r}")
        a, b = record(plain_ids[0], env), record(our_ids[0], env)
        diff = {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
        if diff:
            mismatches.append(f"{name}: {diff}")
    return mismatches


def main(argv: list[str] | None = None) -> int:
    """Run the corpus here (a temporary directory under the current one), cancel every job it
    submitted, print ``{"ids", "mismatches", "verdicts", "error"}`` as JSON."""
    parser = argparse.ArgumentParser(prog="python3 -m tests.ejb_submit_corpus")
    parser.add_argument("--dep", type=int, required=True, help="the job holding the cluster")
    args = parser.parse_args(argv)
    env = corpus_env(os.environ)
    submitted: list[int] = []
    mismatches: list[str] = []
    verdicts: dict[str, str] = {}
    error = None
    try:
        with tempfile.TemporaryDirectory(prefix="ejb-corpus-", dir=os.getcwd()) as workdir:
            mismatches = compare(Path(workdir), args.dep, env, submitted, verdicts)
    except Exception:  # noqa: BLE001 - reported to the test, which fails with it
        error = traceback.format_exc()
    finally:
        if submitted:
            subprocess.run(["scancel", *map(str, submitted)], capture_output=True, env=env, check=False)
    print(json.dumps({"ids": submitted, "mismatches": mismatches, "verdicts": verdicts, "error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

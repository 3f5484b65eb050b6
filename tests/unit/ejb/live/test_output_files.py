"""A bundled job's output and error files are the ones sbatch gives J0: its -o/-e patterns filled
in as slurmd fills them for a batch step (what Slurm 22.05 wrote on the local cluster), the
user's patterns read as sbatch reads them, every subjob appending to the files."""

from __future__ import annotations

import json

import pytest

from ejb.live import jobs
from ejb.sbatch_cli import Grammar
from ejb.submit import files_of, parse
from tests.unit.ejb.test_submit_parse import FIXTURES, script

# sbatch 22.05's --help leaves --open-mode out: ejb-submit asks the installed sbatch how it takes it
G = Grammar.from_help(
    (FIXTURES / "sbatch-help-22.05.txt").read_text(),
    json.loads((FIXTURES / "sbatch-takes-22.05.json").read_text()),
    ask=lambda name: "required" if name == "open-mode" else None,
)

J2 = jobs.BatchFacts(job_id=2, name="wrap", user="root", host="vm")


@pytest.mark.parametrize(
    ("pattern", "written"),
    [
        # file names sbatch's jobs got on the local cluster (Slurm 22.05.8), job 2 named "wrap" on host "vm"
        ("out-%N-%n-%t-%s-%a-%5j.txt", "out-vm-0-0-batch-4294967294-00002.txt"),
        ("%j-%J-%A-%x-%u-%%-%10a-%3t", "2-2-2-wrap-root-%-4294967294-000"),
        ("a-%%j-%%%j-%12j-%0j-%1j-%z-%.3j-%", "a-%j-%2-0000000002-2-2-%z-%.3j-%"),
        ("b-%N-%%N-%%%N-%%%%j", "b-vm-%N-%vm-%%j"),
        ("w-%5s-%5N-%5x-%5u-%5A-%5J-%5n-%5z-%5b-%5%-%5", "w-batch-vm-wrap-root-00002-00002-00000-5z-5b-5%-5"),
        ("%b", "%b"),  # not a code in 22.05
        ("slurm-2.out", "slurm-2.out"),
    ],
)
def test_patterns_are_filled_in_as_slurmd_does_for_a_batch_step(pattern, written):
    assert jobs.expand_pattern(pattern, J2) == written


def test_a_relative_file_is_in_the_jobs_work_directory():
    assert jobs.batch_file("out-%j.txt", "/w/run", J2) == "/w/run/out-2.txt"
    assert jobs.batch_file("/tmp/out-%j.txt", "/w/run", J2) == "/tmp/out-2.txt"


def test_only_a_real_percent_n_needs_the_batch_host():
    assert jobs.names_host("o-%N") and jobs.names_host("o-%3N") and jobs.names_host("%%%N")
    assert not jobs.names_host("o-%%N") and not jobs.names_host("o-%n-%j")


def test_a_subjob_writes_to_j0s_error_file_too_and_never_to_the_users_pattern():
    options: list[list[str | None]] = [["-e", "err-%j.txt"], ["--open-mode", "truncate"]]
    argv = jobs.subjob_argv(options, ["job.sh"], 2, 900, "ejb70.1", "/w/o-70", "/w/err-70.txt")
    assert "--output=/w/o-70" in argv and "--error=/w/err-70.txt" in argv and "--open-mode=append" in argv
    assert "err-%j.txt" not in argv and "truncate" not in argv
    alone = jobs.subjob_argv([], ["job.sh"], 2, 900, "n", "/w/o")
    assert not any(a.startswith("--error") for a in alone)


def test_the_files_are_read_as_sbatch_reads_them(tmp_path):
    # the command line wins over SBATCH_* variables, these over the script's #SBATCH lines
    body = "#!/bin/sh\n#SBATCH -o s-%j.out -e s-%j.err\n#SBATCH --open-mode=append -D sub\nx\n"
    path = script(tmp_path, body)
    env = {"SBATCH_ERROR": "env-%j.err", "SBATCH_OPEN_MODE": "truncate"}
    req = parse(["-o", "c-%j.out", str(path)], G)
    files = files_of(req, env, "/home/u")
    assert files == {"output": "c-%j.out", "error": "env-%j.err", "open_mode": "truncate",
                     "workdir": "/home/u/sub"}  # fmt: skip
    assert files_of(req, {}, "/home/u")["error"] == "s-%j.err"
    assert files_of(req, {}, "/home/u")["open_mode"] == "append"
    # nothing asked: sbatch's default output, errors with it, the cluster's open mode
    plain = files_of(parse(["--wrap", "dmr-run -- a"], G), {}, "/home/u")
    assert plain == {"output": "slurm-%j.out", "error": "", "open_mode": "", "workdir": "/home/u/"}

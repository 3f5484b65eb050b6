"""ejb-submit beside sbatch on the corpus of batch scripts (tests/ejb_submit_corpus.py) in the cluster
of each release: the corpus runs in the login container (``python3 -m tests.ejb_submit_corpus`` from
the mounted checkout), where that release's sbatch is and ejb-submit reads its options from that
sbatch's ``--help``. The same jobs through both, the same verdicts in sbatch's words, options one
release has and another lacks included."""

from __future__ import annotations

import json
import re

import pytest

from slurm_ext.containers.cluster import DockerCluster
from tests.ejb_submit_corpus import CORPUS, RELEASE_OPTIONS

from .conftest import NODES, RELEASE, Jobs

pytestmark = pytest.mark.docker


def test_the_corpus_gives_the_same_jobs_through_ejb_submit_as_through_sbatch(
    docker_cluster: DockerCluster, jobs: Jobs
) -> None:
    held = jobs.submit(NODES, "sleep 600", output="/dev/null")  # every job of the corpus stays pending
    jobs.wait_running(held)
    res = docker_cluster.run("python3", "-m", "tests.ejb_submit_corpus", "--dep", str(held), timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    found = json.loads(res.stdout.splitlines()[-1])
    assert found["error"] is None, found["error"]
    assert not found["mismatches"], "\n".join(found["mismatches"])
    assert found["ids"] and len(found["verdicts"]) == len(CORPUS) >= 40
    here = _version(RELEASE)
    for long, since in RELEASE_OPTIONS.items():  # the corpus has a script of that name using it
        unknown = found["verdicts"][long].startswith(f"sbatch: unrecognized option '--{long}")
        assert unknown == (here < _version(since)), (long, found["verdicts"][long])


def test_ejb_submit_reads_the_options_of_the_installed_sbatch(docker_cluster: DockerCluster) -> None:
    """ejb-submit's option table (``python3 -m ejb.sbatch_cli`` in the login container) is what this
    release's ``sbatch --help`` lists: the options other releases lack or add included or left out."""
    res = docker_cluster.run("python3", "-m", "ejb.sbatch_cli", timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    table = json.loads(res.stdout)
    shown = docker_cluster.run("sbatch", "--help")
    assert shown.returncode == 0, shown.stderr
    listed = set(re.findall(r"^ +(?:-\w,? +)?--([\w-]+)", shown.stdout, re.M))
    assert listed == set(table), (sorted(listed - set(table)), sorted(set(table) - listed))
    here = _version(RELEASE)
    expected = {long for long, since in RELEASE_OPTIONS.items() if here >= _version(since)}
    assert {long for long in RELEASE_OPTIONS if long in table} == expected, RELEASE
    assert table["nodes"] == "required" and table["hold"] == "none" and table["propagate"] == "optional"
    if "oom-kill-step" in table:  # --oom-kill-step[=0|1]: a value only after "="
        assert table["oom-kill-step"] == "optional"


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))

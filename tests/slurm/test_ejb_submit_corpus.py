"""ejb-submit beside sbatch on the corpus of batch scripts (tests/ejb_submit_corpus.py) on the local
cluster: the same jobs through both, the same verdicts on what sbatch rejects. The cluster is held
full by one job meanwhile, so every job stays pending. (tests/docker/test_ejb_submit_corpus.py: the
same corpus on each release's containers.)
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.ejb_submit_corpus import CORPUS, compare, corpus_env, job_ids, submit

pytestmark = pytest.mark.slurm


def _env(slurm) -> dict[str, str]:  # noqa: ANN001
    return corpus_env(slurm.cmd.env)


@pytest.fixture
def held(slurm, jobs, local_cluster) -> int:  # noqa: ANN001
    """A job that holds every node: what the corpus submits stays pending."""
    blocker = jobs.submit(local_cluster.cfg.nodes, name="blocker")
    jobs.wait_running(blocker)
    return blocker


def test_the_corpus_gives_the_same_jobs_through_ejb_submit_as_through_sbatch(slurm, jobs, held, tmp_path):
    mismatches = compare(tmp_path, held, _env(slurm), jobs.ids)
    assert not mismatches, "\n".join(mismatches)
    assert len(CORPUS) >= 40


def test_the_corpus_gives_the_same_jobs_with_the_manager_up(slurm, jobs, held, tmp_path):
    # The manager answers now: a job EJB does not bundle goes to sbatch as typed, saying why; one it
    # would bundle finds no slot on the held cluster and is J0 alone, the user's job as typed.
    from ejb.live import scenario
    from slurm_ext.config import load_config
    from slurm_ext.protocol import free_port

    port = free_port()
    conf = load_config().cluster.slurm_conf
    manager = scenario.start_manager(tmp_path / "state", tmp_path / "manager.log", port, free_port(), conf)
    try:
        work = tmp_path / "work"
        work.mkdir()
        mismatches = compare(work, held, {**_env(slurm), "EJB_MANAGER": f"127.0.0.1:{port}"}, jobs.ids)
    finally:
        scenario.stop_manager(manager)
    assert not mismatches, "\n".join(mismatches)


def test_a_script_on_standard_input_is_read_by_sbatch(slurm, jobs, held, tmp_path):
    script = "#!/bin/bash\n#SBATCH -J from-stdin\nhostname\n"
    res = subprocess.run(["ejb-submit", "-N", "1"], input=script, capture_output=True, text=True, timeout=60,
                         cwd=tmp_path, env=_env(slurm))  # fmt: skip
    assert res.returncode == 0, res.stderr
    job_id = job_ids(res.stdout)[0]
    jobs.ids.append(job_id)
    assert slurm.job(job_id).name == "from-stdin"


def test_an_array_job_leaves_exactly_its_tasks_in_the_queue(slurm, jobs, held, tmp_path):
    path = tmp_path / "dmr-array.sh"
    path.write_text("#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node 2\ndmr-run -- python -m dmr_apps.fs\n")
    res = submit("ejb-submit", ["--array=1-3", str(path)], tmp_path, _env(slurm))
    assert res.returncode == 0 and "a job array" in res.stderr, res.stderr
    job_id = job_ids(res.stdout)[0]
    jobs.ids.append(job_id)
    out = slurm.cmd.run(["squeue", "-h", "-r", "-o", "%i %j"]).stdout.split("\n")
    mine = [ln for ln in out if ln.startswith(f"{job_id}_")]
    assert sorted(ln.split()[0] for ln in mine) == [f"{job_id}_{i}" for i in (1, 2, 3)], out
    assert len([ln for ln in out if ln.strip()]) == 1 + 3  # the blocker and the three tasks, nothing else
    assert os.environ.get("SBATCH_ARRAY_INX") is None

"""A site's accounting as a workload (``-w sacct:...``, ``-w sacct-file:...``) on real ``sacct --json``
output of each release, recorded on the dockerized cluster (``data/sacct-<release>.json``).

The same jobs in every recording, submitted in this order: "one" (1 node, 2 min limit, ran 8 s),
"two" (2 nodes, 3 min, 3 s) 2 s later, "fails" (1 node, 1 min, exits 3 after 1 s) 2 s after that,
"waits" (every node, cancelled while pending), "nolimit" (1 node, no limit, 1-2 s), "running" (still
running when sacct was asked). The releases differ in shape: times plain integers or
``{"set", "infinite", "number"}`` objects, ``state.current`` a string or a list, a pending job's start 0
or NO_VAL, and "no limit" as ``null`` (22.05), 525600 minutes (24.11) or ``infinite: true`` (26.05)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurm_ext.cli import app
from slurm_ext.workloads import load_workload
from slurm_ext.workloads.sacct import (
    SacctError,
    SacctSpec,
    load_sacct,
    node_sharing_groups,
    parse_spec,
    sacct_to_workload,
)

DATA = Path(__file__).parent / "data"
SQUEUE = Path(__file__).parents[3] / "fixtures" / "slurm" / "24.11" / "squeue.json"
RELEASES = ["22.05", "24.11", "26.05"]


def fixture(release: str) -> Path:
    return DATA / f"sacct-{release}.json"


def names(path: Path) -> dict[str, int]:
    return {j["name"]: j["job_id"] for j in json.loads(path.read_text())["jobs"]}


@pytest.mark.parametrize("release", RELEASES)
def test_the_same_jobs_are_read_on_every_release(release: str) -> None:
    path = fixture(release)
    ids = names(path)
    wl = load_sacct(f"sacct-file:{path}")
    by_name = {j.name: j for j in wl.jobs}
    assert sorted(by_name) == ["fails", "nolimit", "one", "two"]
    assert {j.job_id for j in wl.jobs} == {ids[n] for n in by_name}
    one, two, fails, nolimit = (by_name[n] for n in ("one", "two", "fails", "nolimit"))
    # nodes used, limits requested (minutes -> s), run times (elapsed)
    assert (one.nodes, two.nodes, fails.nodes, nolimit.nodes) == (1, 2, 1, 1)
    assert (one.time_limit, two.time_limit, fails.time_limit) == (120.0, 180.0, 60.0)
    assert 7 <= one.run_time <= 9 and 2 <= two.run_time <= 4 and 1 <= fails.run_time <= 2
    assert nolimit.time_limit == nolimit.run_time  # no limit: the run time, as for SWF traces
    assert wl.notes["no time limit: run time used as limit"] == 1
    # submit times relative to the first job, in submission order, about 2 s apart
    assert (
        one.submit == 0.0
        and 1 <= two.submit <= 3
        and 3 <= fails.submit <= 6
        and nolimit.submit > fails.submit
    )
    assert [j.name for j in wl.jobs] == ["one", "two", "fails", "nolimit"]
    assert len({j.user for j in wl.jobs}) == 1 and all(j.malleable is None for j in wl.jobs)


@pytest.mark.parametrize("release", RELEASES)
def test_jobs_that_cannot_be_simulated_are_listed_with_a_reason(release: str) -> None:
    path = fixture(release)
    ids = names(path)
    wl = load_sacct(f"sacct-file:{path}")
    assert {(s.job_id, s.reason) for s in wl.skipped} == {
        (ids["waits"], "cancelled while pending"),
        (ids["running"], "not finished (RUNNING)"),
    }


@pytest.mark.parametrize("release", RELEASES)
def test_the_machine_is_given_or_the_nodes_the_jobs_ran_on(release: str) -> None:
    path = fixture(release)
    wl = load_sacct(f"sacct-file:{path}")
    assert 2 <= wl.nodes <= 4  # the recordings' jobs ran on some of n1-n4
    assert any(
        note.startswith(f"machine size {wl.nodes} nodes: the nodes these jobs ran on") for note in wl.notes
    )
    assert load_workload(f"sacct-file:{path}", nodes=16).nodes == 16
    # nodes of the partitions the jobs ran in (as sinfo would tell on the live cluster)
    doc = json.loads(path.read_text())
    machine = {"debug": {f"n{i}" for i in range(1, 9)}, "other": {"n9"}}
    assert sacct_to_workload(doc, machine=machine).nodes == 8
    small = sacct_to_workload(doc, nodes=1)
    assert [j.name for j in small.jobs] == ["one", "fails", "nolimit"]
    assert (names(path)["two"], "larger than the machine (2 > 1 nodes)") in {
        (s.job_id, s.reason) for s in small.skipped
    }


@pytest.mark.parametrize("release", RELEASES)
def test_one_partitions_jobs(release: str) -> None:
    path = fixture(release)
    assert len(load_sacct(f"sacct-file:{path}@debug").jobs) == 4
    with pytest.raises(SacctError, match="no finished job to simulate .*in another partition \\(debug\\): 6"):
        load_sacct(f"sacct-file:{path}@batch")


@pytest.mark.parametrize("release", RELEASES)
def test_simulate_and_compare_take_it(release: str, tmp_path: Path) -> None:
    path = fixture(release)
    res = CliRunner().invoke(app, ["simulate", "-w", f"sacct-file:{path}", "-p", "easy", "-q", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["jobs_simulated"] == 4 and summary["jobs_skipped"] == 2
    res = CliRunner().invoke(app, ["compare", "-w", f"sacct-file:{path}@debug", "-p", "fcfs,easy", "-q"])
    assert res.exit_code == 0 and "fcfs" in res.stdout and "easy" in res.stdout, res.output


def test_specs() -> None:
    assert parse_spec("sacct:2025-06-01..2025-06-08") == SacctSpec("2025-06-01", "2025-06-08")
    assert parse_spec("sacct:now-7days..@batch") == SacctSpec("now-7days", "now", partition="batch")
    assert parse_spec("SACCT:2025-06-01T08:00:00..now").start == "2025-06-01T08:00:00"
    assert parse_spec("sacct-file:/tmp/a@b.json@gpu") == SacctSpec(
        path=Path("/tmp/a@b.json"), partition="gpu"
    )
    spec = parse_spec("sacct:now-1day..now@debug")
    assert spec.command() == ["sacct", "--json", "-a", "-X", "-S", "now-1day", "-E", "now", "-r", "debug"]
    for bad in (
        "sacct:",
        "sacct:2025-06-01",
        "sacct:..now",
        "sacct:a..b..c",
        "sacct:a..b@",
        "sacct-file:",
        "sacct:a b..c",
    ):
        with pytest.raises(SacctError, match="expected sacct:START..END"):
            parse_spec(bad)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON \\(line 1, column 2"),
        ('{"meta": {}}', "is not sacct --json output \\(no 'jobs' list\\)"),
        ("[1, 2]", "is not sacct --json output"),
        (SQUEUE.read_text(), "its jobs have no 'time'; squeue's"),
        ('{"jobs": [], "errors": [{"description": "Unable to connect to database"}]}', "Unable to connect"),
        ('{"jobs": [], "errors": [{"error_number": 9003, "description": "Nothing found"}]}', "no job at all"),
    ],
)
def test_bad_files_are_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "sacct.json"
    path.write_text(text)
    with pytest.raises(SacctError, match=message):
        load_sacct(f"sacct-file:{path}")


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ("sacct:now-1day", "expected sacct:START..END\\[@PARTITION\\]"),
        ("sacct-file:/nonexistent/sacct.json", "no such file: /nonexistent/sacct.json"),
        ("sacct:now-1day..now", "sacct: command not found"),
    ],
)
def test_the_commands_report_one_line_and_exit_2(
    workload: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no sacct, no sinfo here
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    for args in (["simulate", "-w", workload, "-q"], ["compare", "-w", workload, "-q"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
        assert re.search(message, lines[0]), lines[0]
    res = CliRunner().invoke(app, ["simulate", "-w", f"sacct-file:{bad}", "-q"])
    assert res.exit_code == 2 and "is not JSON" in res.stderr, res.output


def in_partitions(doc: dict, partition_of: dict[str, str]) -> dict:
    """``doc`` with the named jobs moved to other partitions (as if they had run there)."""
    for job in doc["jobs"]:
        job["partition"] = partition_of.get(job["name"], job["partition"])
    return doc


def test_partitions_grouped_where_they_share_nodes() -> None:
    parts = {"a": {"n1", "n2"}, "b": {"n5"}, "c": {"n2", "n3"}, "d": {"n3", "n4"}, "e": {"n6"}}
    assert node_sharing_groups(parts) == [
        (["a", "c", "d"], {"n1", "n2", "n3", "n4"}),  # d shares with a only through c
        (["b"], {"n5"}),
        (["e"], {"n6"}),
    ]


@pytest.mark.parametrize("release", RELEASES)
def test_partitions_sharing_no_node_are_pools_of_their_own(release: str) -> None:
    doc = in_partitions(json.loads(fixture(release).read_text()), {"fails": "small", "nolimit": "small"})
    machine = {"debug": {f"n{i}" for i in range(1, 5)}, "small": {"n5"}, "idle": {"n6"}}
    wl = sacct_to_workload(doc, machine=machine)
    assert wl.nodes == 5 and wl.pools == {"debug": 4, "small": 1}  # only partitions jobs ran in
    assert {j.name: j.pool for j in wl.jobs} == {"one": "debug", "two": "debug", "fails": "small",
                                                 "nolimit": "small"}  # fmt: skip
    assert "partitions simulated apart, each on its own nodes: debug (4), small (1)" in wl.notes
    assert [(p.name, p.nodes, [j.name for j in p.jobs]) for p in wl.split()] == [
        ("sacct[debug]", 4, ["one", "two"]),
        ("sacct[small]", 1, ["fails", "nolimit"]),
    ]
    # a job larger than its partition cannot run there, however large the machine
    doc = in_partitions(doc, {"two": "small"})
    wl = sacct_to_workload(doc, machine=machine)
    assert (names(fixture(release))["two"], "larger than its partition (2 > 1 nodes)") in {
        (s.job_id, s.reason) for s in wl.skipped
    }
    # a job sacct names no partition of cannot be placed in one of several pools
    blank = in_partitions(copy.deepcopy(doc), {"two": "debug", "nolimit": ""})
    unplaced = sacct_to_workload(blank, machine=machine)
    assert unplaced.pools == {"debug": 4, "small": 1} and "nolimit" not in {j.name for j in unplaced.jobs}
    assert (names(fixture(release))["nolimit"], "no partition recorded") in {
        (s.job_id, s.reason) for s in unplaced.skipped
    }
    # partitions that share a node are one pool, that node counted once
    shared = {"debug": {f"n{i}" for i in range(1, 5)}, "small": {"n4", "n5"}}
    wl = sacct_to_workload(in_partitions(doc, {"two": "debug"}), machine=shared)
    assert wl.nodes == 5 and wl.pools == {} and {j.pool for j in wl.jobs} == {""}
    assert wl.notes["partitions debug, small share nodes: simulated as one pool of 5 nodes"] == 4

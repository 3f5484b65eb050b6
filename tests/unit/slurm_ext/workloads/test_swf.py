"""SWF reading: header, all 18 fields, -1 values, gzip, skipped jobs with reasons, bad lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from slurm_ext.workloads import bundled_trace_path, load_swf, load_workload, swf_to_workload
from slurm_ext.workloads.swf import FIELDS, SwfError, read_swf, write_swf

HEADER = """; Version: 2.2
; Computer: test
; UnixStartTime: 1000
; MaxNodes: 8
; MaxProcs: 16
; Note: a note line
"""


def line(job, submit, run, alloc, req_procs, req_time, status=1, user=3):
    fields = [job, submit, 5, run, alloc, -1, -1, req_procs, req_time, -1, status, user, 1, -1, 1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


JOBS = [
    line(1, 0, 100, 4, 4, 200),  # ok
    line(2, 10, 50, 4, -1, 100),  # requested procs missing: allocated used
    line(3, 20, 30, 2, 2, -1),  # requested time missing: run time used
    line(4, 30, 0, 2, 2, 100),  # zero run time
    line(5, 40, -1, 2, 2, 100),  # missing run time
    line(6, 50, 10, -1, -1, 100),  # no size
    line(7, 60, 10, 32, 32, 100),  # larger than 16 processors
    line(8, -1, 10, 2, 2, 100),  # missing submit
    line(9, 70, 10.5, 3, 3, 60),  # fractional run time
]


def write(tmp_path: Path, body: str, name: str = "t.swf", gz: bool = False) -> Path:
    p = tmp_path / (name + (".gz" if gz else ""))
    if gz:
        with gzip.open(p, "wt") as f:
            f.write(body)
    else:
        p.write_text(body)
    return p


@pytest.mark.parametrize("gz", [False, True])
def test_header_and_all_fields(tmp_path: Path, gz: bool) -> None:
    tr = read_swf(write(tmp_path, HEADER + "\n".join(JOBS) + "\n", gz=gz))
    assert (tr.header.max_nodes, tr.header.max_procs, tr.header.unix_start_time) == (8, 16, 1000)
    assert tr.header.fields["Computer"] == "test"
    assert tr.header.fields["Note"] == "a note line"
    assert len(FIELDS) == 18 and len(tr.records[0]) == 18
    r = tr.records[1]
    assert (r.job_number, r.allocated_procs, r.requested_procs, r.requested_time) == (2, 4, -1, 100)
    assert (r.status, r.user_id, r.queue, r.think_time) == (1, 3, 1, -1)
    assert tr.records[8].run_time == 10.5


def test_jobs_become_sim_jobs_and_every_skip_has_a_reason(tmp_path: Path) -> None:
    wl = load_swf(write(tmp_path, HEADER + "\n".join(JOBS) + "\n"))
    assert wl.nodes == 16  # one processor = one node, from MaxProcs
    assert [j.job_id for j in wl.jobs] == [1, 2, 3, 9]
    assert wl.jobs[1].nodes == 4  # allocated processors when the request is missing
    assert wl.jobs[2].time_limit == 30  # run time used as limit
    assert wl.notes["requested time missing: run time used as limit"] == 1
    reasons = {s.job_id: s.reason for s in wl.skipped}
    assert reasons[4] == "zero run time"
    assert reasons[5] == "missing run time"
    assert reasons[6].startswith("no size")
    assert reasons[7] == "larger than the machine (32 > 16 nodes)"
    assert reasons[8] == "missing submit time"
    assert len(wl.jobs) + len(wl.skipped) == len(JOBS)


def test_procs_per_node_and_skip_missing_limit(tmp_path: Path) -> None:
    tr = read_swf(write(tmp_path, HEADER + "\n".join(JOBS) + "\n"))
    wl = swf_to_workload(tr, procs_per_node=4, missing_limit="skip")
    assert wl.nodes == 4
    assert {j.job_id: j.nodes for j in wl.jobs} == {1: 1, 2: 1, 9: 1}
    assert {s.job_id: s.reason for s in wl.skipped}[3] == "missing requested time"


def test_machine_size_without_header_comes_from_the_largest_job(tmp_path: Path) -> None:
    wl = load_swf(write(tmp_path, "\n".join(JOBS[:3]) + "\n"))
    assert wl.nodes == 4
    assert wl.notes


def test_malformed_line_names_the_line(tmp_path: Path) -> None:
    body = HEADER + JOBS[0] + "\n" + "1 2 3\n"
    with pytest.raises(SwfError, match=r"t\.swf:8: expected 18 fields, found 3"):
        read_swf(write(tmp_path, body))
    bad = JOBS[0].replace(" 200 ", " abc ")
    with pytest.raises(SwfError, match=r":7: field is not a number: 'abc'"):
        read_swf(write(tmp_path, HEADER + bad + "\n"))


def test_header_only_and_missing_file(tmp_path: Path) -> None:
    tr = read_swf(write(tmp_path, HEADER))
    assert len(tr) == 0 and tr.records == []
    with pytest.raises(FileNotFoundError):
        read_swf(tmp_path / "nope.swf")


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    tr = read_swf(write(tmp_path, HEADER + "\n".join(JOBS) + "\n"))
    out = tmp_path / "copy.swf.gz"
    write_swf(out, tr.records, tr.header)
    again = read_swf(out)
    assert again.records == tr.records
    assert again.header.max_procs == 16


def test_bundled_trace_works_without_shared() -> None:
    assert bundled_trace_path().is_file()
    wl = load_workload("kth-small")
    assert (len(wl.jobs), wl.nodes, wl.skipped) == (500, 100, [])


def test_an_empty_trace_is_refused(tmp_path):
    from slurm_ext.workloads import load_workload

    empty = tmp_path / "empty.swf"
    empty.write_text("; only a comment\n")
    with pytest.raises(ValueError, match="has no jobs"):
        load_workload(str(empty))


def test_cores_per_node_makes_whole_node_jobs_on_a_smaller_machine() -> None:
    from slurm_ext.workloads import load_workload

    procs = load_workload("kth-small")
    nodes = load_workload("kth-small", cores_per_node=4)
    assert nodes.nodes == procs.nodes // 4  # KTH-SP2: MaxProcs 100 -> 25 nodes of 4 cores
    assert [j.nodes for j in nodes.jobs] == [-(-j.nodes // 4) for j in procs.jobs]
    assert load_workload("kth-small", cores_per_node=1).jobs == procs.jobs and not procs.notes
    with pytest.raises(ValueError, match="--cores-per-node must be at least 1"):
        load_workload("kth-small", cores_per_node=0)


def test_path_at_a_partition_takes_that_partitions_jobs_only(tmp_path: Path) -> None:
    """``-w TRACE@N``: CEA-Curie's 198,509 jobs of partition 10 ('standard') are what SD-Policy's
    paper simulates; the other partitions' jobs are not the workload (a note, not skipped jobs)."""
    rows = [line(1, 0, 100, 4, 4, 200), line(2, 10, 50, 2, 2, 100), line(3, 20, 30, 2, 2, 60)]
    rows = [r.rsplit(" ", 3)[0] + f" {p} -1 -1" for r, p in zip(rows, (10, 4, 10), strict=True)]
    path = write(tmp_path, HEADER + "\n".join(rows) + "\n")
    wl = load_workload(f"{path}@10")
    assert [j.job_id for j in wl.jobs] == [1, 3] and not wl.skipped and wl.name == "t.swf@10"
    assert wl.notes["jobs of other partitions than 10 left out"] == 1
    assert [j.job_id for j in load_workload(str(path)).jobs] == [1, 2, 3]  # no suffix: all of them
    with pytest.raises(ValueError, match=r"no job of partition 7 in the trace \(its partitions: 4, 10\)"):
        load_workload(f"{path}@7")
    with pytest.raises(ValueError, match="neither a file"):
        load_workload(f"{tmp_path / 'missing.swf'}@10")


def test_jobs_takes_the_first_jobs_of_the_bundled_trace_too() -> None:
    from slurm_ext.workloads import load_workload

    whole, head = load_workload("kth-small"), load_workload("kth-small", jobs=200)
    assert len(head.jobs) == 200 and head.jobs == whole.jobs[:200]  # it was ignored: 500 jobs

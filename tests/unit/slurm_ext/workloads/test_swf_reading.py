"""Each ambiguous SWF reading is an explicit loader option; PYSS's reading differs on each."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_ext.workloads import load_swf, load_workload
from slurm_ext.workloads.reading import DEFAULT, PAPER, PYSS, SwfReading, parse_reading

HEADER = "; MaxProcs: 16\n"


def line(job: int, submit: float, run: float, alloc: int, req_procs: int, req_time: float) -> str:
    fields = [job, submit, 5, run, alloc, -1, -1, req_procs, req_time, -1, 1, 3, 1, -1, 1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


JOBS = [
    line(1, 10, 100, 4, 4, 200),  # plain
    line(2, 20, 100, 6, 4, 200),  # allocated more than requested
    line(3, 30, -1, 2, 2, 100),  # unknown run time
    line(4, 40, 300, 2, 2, 100),  # ran past its requested time
    line(5, 50, 80, 2, 2, -1),  # no requested time
    line(6, 60, 10, 32, 32, 100),  # larger than the machine
]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    p = tmp_path / "r.swf"
    p.write_text(HEADER + "\n".join(JOBS) + "\n")
    return p


def jobs(path: Path, reading: SwfReading) -> dict[int, tuple[int, float, float]]:
    return {j.job_id: (j.nodes, j.time_limit, j.run_time) for j in load_swf(path, reading=reading).jobs}


def test_default_reading_is_unchanged(trace: Path) -> None:
    got = jobs(trace, DEFAULT)
    assert got == {1: (4, 200, 100), 2: (4, 200, 100), 4: (2, 100, 300), 5: (2, 80, 80)}
    assert load_swf(trace).jobs == load_swf(trace, reading=DEFAULT).jobs


def test_pyss_reading_keeps_every_job(trace: Path) -> None:
    got = jobs(trace, PYSS)
    assert got[2] == (6, 200, 100)  # allocated processors
    assert got[3] == (2, 1, 1)  # unknown run time: a 1-second job
    assert got[4] == (2, 300, 100)  # plans with the run time, stops at the request
    assert got[5] == (2, 80, 1)  # no request: the run time is the estimate, runs 1 s
    assert got[6] == (16, 100, 10)  # clipped to the machine
    assert len(got) == len(JOBS)


@pytest.mark.parametrize(
    ("option", "job", "expected"),
    [
        ({"overrun": "extend"}, 4, (2, 300, 300)),
        ({"overrun": "pyss"}, 4, (2, 300, 100)),
        ({"size": "allocated"}, 2, (6, 200, 100)),
        ({"missing_limit": "pyss"}, 5, (2, 80, 1)),
        ({"unknown_run": "tiny"}, 3, (2, 1, 1)),
    ],
)
def test_each_option_changes_only_its_own_jobs(trace: Path, option: dict, job: int, expected: tuple) -> None:
    base = jobs(trace, DEFAULT)
    got = jobs(trace, SwfReading(**option))
    assert got[job] == expected
    assert {k: v for k, v in got.items() if k != job} == {k: v for k, v in base.items() if k != job}


def test_skips_keep_their_reasons(trace: Path) -> None:
    wl = load_swf(trace, reading=SwfReading(missing_limit="skip"))
    reasons = {s.job_id: s.reason for s in wl.skipped}
    assert reasons == {
        3: "missing run time",
        5: "missing requested time",
        6: "larger than the machine (32 > 16 nodes)",
    }


def test_paper_reading_is_pyss_but_for_missing_requested_times(trace: Path) -> None:
    pyss, paper = jobs(trace, PYSS), jobs(trace, PAPER)
    assert paper[5] == (2, 80, 80)  # no request: the run time is the limit, the job runs fully
    assert {k: v for k, v in paper.items() if k != 5} == {k: v for k, v in pyss.items() if k != 5}


def test_parse_reading_presets_and_overrides() -> None:
    assert parse_reading("default") == DEFAULT
    assert parse_reading("pyss") == PYSS
    assert parse_reading("paper") == PAPER == parse_reading("pyss,missing_limit=run_time")
    assert parse_reading("pyss,size=requested").size == "requested"
    assert parse_reading("overrun=extend") == SwfReading(overrun="extend")
    with pytest.raises(ValueError, match="presets"):
        parse_reading("slurm")
    with pytest.raises(ValueError, match="is not one of"):
        parse_reading("pyss,size=huge")
    with pytest.raises(ValueError, match="keys"):
        parse_reading("pyss,colour=red")


def test_load_workload_passes_the_reading(trace: Path) -> None:
    assert len(load_workload(str(trace), reading=PYSS).jobs) == len(JOBS)
    assert len(load_workload(str(trace)).jobs) == 4

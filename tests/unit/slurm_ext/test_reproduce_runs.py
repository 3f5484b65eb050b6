"""The reproduce commands' runs as descriptions: the local path is each description through the
command's pure function; a job array's tasks give the same rows (here without Slurm: a fake adapter
runs each task in this process); a failed task names its run and shows its output; the array is
cancelled on any way out; user mistakes are one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from slurm_ext.backend import JobRequest
from slurm_ext.reproduce import dbes, reproduce_app, sd, sweep
from slurm_ext.reproduce.on_slurm import ArrayOptions, TaskFailed, run_on_slurm, task_request
from slurm_ext.reproduce.runs import Run, main, output_path, read_row, run_locally, run_task, write_spec
from slurm_ext.reproduce.sweep import one_line
from tests.unit.slurm_ext.test_reproduce import traces

WALL = ("seconds",)  # wall-time columns: the only ones two executions of a run may differ in


def same(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in WALL}


def sd_runs(tmp_path: Path) -> list[Run]:
    return sd.runs(traces(tmp_path), 30, 5)


def nothing(finished: int, label: str) -> None:
    pass


def test_the_local_path_is_each_description_through_the_pure_function(tmp_path: Path) -> None:
    runs = sd_runs(tmp_path)
    assert len(runs) == len(sd.CASES) * (
        3 + len(sd.SHARINGS) * len(sd.MAX_SLOWDOWNS)
    )  # EASY, backfill, SD, worst
    json.dumps([r.params for r in runs], allow_nan=False)  # plain JSON, nothing Python-only
    heard: list[tuple[int, str]] = []
    rows = run_locally(sd.execute, runs, lambda n, label: heard.append((n, label)))
    assert [same(r) for r in rows] == [same(sd.execute(r.params)) for r in runs]
    assert heard == [(i + 1, r.label) for i, r in enumerate(runs)]
    assert [f"{r['workload']} {r['run']}" for r in rows] == [r.label for r in runs]
    few = dbes.runs(1)[::9]  # Fig. 4 and Fig. 7 runs
    assert run_locally(dbes.execute, few, nothing) == [dbes.execute(r.params) for r in few]


def test_the_command_writes_the_rows_of_its_descriptions(tmp_path: Path) -> None:
    folder, out = traces(tmp_path), tmp_path / "out"
    args = ["sd", "--traces", str(folder), "--jobs", "30", "--ricc-window", "5", "--sharing", "nodes"]
    res = CliRunner().invoke(reproduce_app, [*args, "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    expected = sd.relate([sd.execute(r.params) for r in sd.runs(folder, 30, 5, ("nodes",))])
    assert [same(r) for r in json.loads(res.stdout)["rows"]] == [same(r) for r in expected]
    easy = next(r for r in expected if r["workload"] == "CEA-Curie" and r["run"] == "EASY")
    assert easy["slowdown_vs_easy"] == 0 and all(f"{k}_vs_easy" in easy for k in sd.KEYS)


def test_dbes_means_its_seeds_rows_as_before() -> None:
    def row(figure: str, malleable: float, policy: str, seed: int, span: float, served: Any) -> dict:
        return {"figure": figure, "malleable": malleable, "policy": policy, "seed": seed, "makespan": span,
                "evolving_served": served}  # fmt: skip

    rows = [row("4", f, p, s, 100.0 * (1 + s) + f, "") for f in dbes.FRACTIONS for s in range(2)
            for p in dbes.ESP_POLICIES]  # fmt: skip
    rows += [row("7", 0.4, p, s, 10.0 + s, s) for p in dbes.EVOLVING_POLICIES for s in range(2)]
    table, evolving = dbes.aggregate(rows)
    assert list(table) == list(dbes.FRACTIONS) and table[0.3]["ep"] == 150.3
    assert evolving["ldf"] == {"makespan": 10.5, "served": 0.5} and list(evolving) == list(
        dbes.EVOLVING_POLICIES
    )


def test_each_task_writes_the_row_its_description_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs, folder = sd_runs(tmp_path)[:4], tmp_path / "array"
    write_spec(folder, sd.execute, runs)
    for i in range(len(runs)):
        monkeypatch.setenv("SLURM_ARRAY_TASK_ID", str(i))
        assert main([str(folder)]) == 0
    assert [same(read_row(folder, i) or {}) for i in range(len(runs))] == [
        same(sd.execute(r.params)) for r in runs
    ]
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID")
    assert main([str(folder)]) == 2  # not a task of an array


def test_only_a_module_level_function_can_run_in_an_array(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="module-level"):
        write_spec(tmp_path, lambda params: {}, [])


class FakeArray:
    """A job array run in this process: ``submit`` executes every task at once (task ``fail``: its
    output and no row); ``array_states`` says how each ended."""

    def __init__(self, fail: int | None = None, state: str = "FAILED", interrupt: bool = False) -> None:
        self.fail, self.state, self.interrupt = fail, state, interrupt
        self.requests: list[JobRequest] = []
        self.cancelled: list[int] = []

    def submit(self, request: JobRequest) -> int:
        self.requests.append(request)
        folder = Path(request.extra_args[request.extra_args.index("-o") + 1]).parent
        for i in range(int((request.array or "").split("%")[0].split("-")[1]) + 1):
            if i == self.fail:
                output_path(folder, i).write_text(
                    "".join(f"line {n}\n" for n in range(30)) + "ValueError: boom\n"
                )
            else:
                run_task(folder, i)
        return 42

    def array_states(self, job_id: int) -> dict[int, str]:
        if self.interrupt:
            raise KeyboardInterrupt
        return {i: self.state if i == self.fail else "COMPLETED" for i in range(100)}

    def cancel_quietly(self, job_id: int, name: str | None = None) -> None:
        self.cancelled.append(job_id)


def test_a_job_array_gathers_the_local_rows_in_run_order(tmp_path: Path) -> None:
    runs = sd_runs(tmp_path)
    options = ArrayOptions(tmp_path / "shared", partition="big", time_limit=120.0, max_parallel=3, poll=0)
    fake, heard = FakeArray(), []
    rows = run_on_slurm(sd.execute, runs, options, lambda n, label: heard.append(n), fake)
    assert [same(r) for r in rows] == [same(r) for r in run_locally(sd.execute, runs, nothing)]
    assert heard == list(range(1, len(runs) + 1)) and fake.cancelled == []
    request = fake.requests[0]
    assert request.array == f"0-{len(runs) - 1}%3" and request.nodes == 1 and request.time_limit == 120.0
    assert request.command is not None and request.command.endswith(
        f"-m slurm_ext.reproduce.runs {(tmp_path / 'shared').resolve()}"
    )
    assert (
        request.extra_args[-2:] == ("-p", "big")
        and str(tmp_path / "shared" / "task-%a.out") in request.extra_args
    )


def test_a_failed_task_names_its_run_shows_its_output_and_cancels_the_array(tmp_path: Path) -> None:
    runs = sd_runs(tmp_path)[:5]
    fake = FakeArray(fail=3)
    with pytest.raises(TaskFailed) as failed:
        run_on_slurm(sd.execute, runs, ArrayOptions(tmp_path / "shared", poll=0), nothing, fake)
    said = str(failed.value)
    assert said.startswith(f"run 3 ({runs[3].label}) ended FAILED without its row; the end of ")
    assert "ValueError: boom" in said and "line 11" in said and "line 10\n" not in said  # the last 20 lines
    assert fake.cancelled == [42]


def test_a_task_that_ended_without_its_row_points_at_the_shared_folder(tmp_path: Path) -> None:
    fake = FakeArray(fail=0, state="COMPLETED")
    with pytest.raises(TaskFailed, match="on a file system the nodes share"):
        run_on_slurm(
            sd.execute, sd_runs(tmp_path)[:2], ArrayOptions(tmp_path / "s", poll=0, grace=0), nothing, fake
        )


def test_ctrl_c_cancels_the_array(tmp_path: Path) -> None:
    fake = FakeArray(fail=0, state="RUNNING", interrupt=True)
    with pytest.raises(KeyboardInterrupt):
        run_on_slurm(sd.execute, sd_runs(tmp_path)[:2], ArrayOptions(tmp_path / "s", poll=0), nothing, fake)
    assert fake.cancelled == [42]


def test_the_request_without_limits_is_a_plain_array(tmp_path: Path) -> None:
    request = task_request(tmp_path, 7, ArrayOptions(tmp_path))
    assert request.array == "0-6" and request.time_limit is None and "-p" not in request.extra_args


def dbes_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "slurm_ext", "reproduce", "dbes", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--partition", "debug"), "error: --partition needs --on-slurm"),
        (("--time", "5"), "error: --time needs --on-slurm"),
        (("--on-slurm", "--max-parallel", "0"), "error: --max-parallel must be >= 1, got 0"),
    ],
)
def test_on_slurm_mistakes_are_one_line_and_exit_2(args: tuple[str, ...], said: str) -> None:
    res = dbes_cli("--seeds", "1", *args)
    assert res.returncode == 2 and res.stderr.strip() == said, res.stderr


def test_no_slurm_is_the_adapters_error_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # no sbatch here
    res = dbes_cli("--seeds", "1", "--on-slurm", "--out", str(tmp_path / "out"), "--json", env=env)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == "error: sbatch: command not found (is slurm-client installed?)"


def test_slurms_message_is_one_line() -> None:
    said = ("sbatch: sbatch: error: invalid partition specified: nope\n"
            "sbatch: error: Batch job submission failed: Invalid partition name specified\n")  # fmt: skip
    assert one_line(said) == (
        "sbatch: invalid partition specified: nope; Batch job submission failed: Invalid partition name "
        "specified"
    )


def test_a_failed_task_ends_the_command_with_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setattr(sweep, "slurm_cluster", lambda: FakeArray(fail=1))
    runs = sd_runs(tmp_path)[:3]
    with pytest.raises(typer.Exit) as ended:
        sweep.run_sweep(sd.execute, runs, ArrayOptions(tmp_path / "s", poll=0), progress=False)
    assert ended.value.exit_code == 1
    assert capsys.readouterr().err.startswith(f"error: run 1 ({runs[1].label}) ended FAILED")

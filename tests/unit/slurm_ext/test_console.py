"""The CLIs' rich output: the progress bar (counts, rate, ETA on stderr; nothing when disabled) and tables."""

from __future__ import annotations

import io

from rich.console import Console

from slurm_ext import console as pb


def test_disabled_bar_is_a_no_op(capsys):
    with pb.progress_bar("target jobs", "targets", enabled=False) as update:
        update(1, 2)
    assert capsys.readouterr() == ("", "")


def test_bar_shows_counts_rate_and_eta(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(pb, "Console", lambda stderr: Console(file=out, width=120, force_terminal=False))
    with pb.progress_bar("target jobs", "targets", every=0.0) as update:
        for done in range(0, 51):
            update(done, 50)
    text = out.getvalue()
    assert "target jobs" in text and "50/50" in text
    assert "targets/s" in text and "ETA" in text


def test_rate_column_before_any_speed_is_known():
    from rich.progress import Progress

    p = Progress()
    task_id = p.add_task("x", total=10)
    task = next(t for t in p.tasks if t.id == task_id)
    assert pb.RateColumn("targets").render(task).plain == "-"


def test_bar_shows_a_note(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(pb, "Console", lambda stderr: Console(file=out, width=160, force_terminal=False))
    with pb.progress_bar("sweep points", "points", every=0.0) as update:
        update(1, 2, "o_max=2: t_t -30.0%")
        update(2, 2)
    assert "o_max=2: t_t -30.0%" in out.getvalue() and "2/2" in out.getvalue()


def test_progress_shows_on_a_terminal_unless_quiet(monkeypatch):
    monkeypatch.setattr(pb.sys.stderr, "isatty", lambda: True, raising=False)
    assert pb.show_progress(quiet=False) and not pb.show_progress(quiet=True)
    monkeypatch.setattr(pb.sys.stderr, "isatty", lambda: False, raising=False)
    assert not pb.show_progress(quiet=False)


def test_table_text_is_plain_aligned_and_unwrapped():
    wide = "x" * 300
    rows = [["easy", 500, wide], ["[bold]x", 7, "[-1%, +2%]"]]
    text = pb.table_text(pb.table(["policy", "jobs", "wall[s]"], rows))
    lines = text.splitlines()
    assert lines[0].split() == ["policy", "jobs", "wall[s]"]  # never read as markup
    assert lines[3].startswith("[bold]x") and lines[3].endswith("[-1%, +2%]")
    assert set(lines[1]) == {"─"}
    assert lines[2].startswith("easy") and wide in lines[2]  # no wrapping at any terminal width
    assert lines[2].index("500") + 3 == lines[3].index("7") + 1  # numbers right-aligned
    assert "\x1b" not in text and all(line == line.rstrip() for line in lines)


def test_live_tables_print_in_the_same_style(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    import ejb.live.cli as live
    from ejb.cli import app as ejb_app
    from slurm_ext.cli import app

    events = tmp_path / "events.jsonl"
    event = {"time": 0, "kind": "decision", "job": 7, "policy": "dmr", "old": 2, "new": 4, "reason": "idle"}
    events.write_text(json.dumps(event) + "\nnot json\n")
    r = CliRunner().invoke(app, ["events", "--path", str(events)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"1 events from {events}" and lines[1].split()[:3] == ["time", "kind", "job"]
    assert set(lines[2]) == {"─"} and "2->4" in lines[3] and lines[3].endswith("idle")

    app_row = {"eid": 70, "owner": "ann", "phase": "running", "nodes": 4, "limit": 600, "progress": 0.5,
               "subjobs": {"1": {"job_id": 71, "nodes": 2, "state": "R", "members": [0]}}, "migrations": 1,
               "events": []}  # fmt: skip
    monkeypatch.setattr(live, "request", lambda where, msg: {"ok": True, "apps": [app_row]})
    r = CliRunner().invoke(ejb_app, ["status"])
    assert r.exit_code == 0, r.output
    head, rule, row = r.output.splitlines()[:3]
    assert head.startswith("job (J0)") and set(rule) == {"─"}
    assert row.split() == ["70", "ann", "running", "4", "x", "600s", "50%", "1=71:2:R*", "1"]

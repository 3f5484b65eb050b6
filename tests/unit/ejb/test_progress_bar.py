"""The rich progress bar: counts, targets/s and ETA on stderr; nothing when disabled."""

from __future__ import annotations

import io

from rich.console import Console

from ejb.experiments import progress_bar as pb


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

"""What the service did, seen from outside: its events file, `slurm-ext events` and its metrics."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest

from slurm_ext.protocol import free_port

from .conftest import serve_process, stop_process

pytestmark = pytest.mark.slurm


def test_events_and_metrics_of_a_live_resize(slurm, tmp_path):
    port, metrics, log = free_port(), free_port(), tmp_path / "service.log"
    path = tmp_path / "events.jsonl"
    proc = serve_process(port, log, "--metrics-port", str(metrics), "--journal-dir", str(tmp_path / "j"),
                         "--events", str(path))  # fmt: skip
    try:
        fs_args = "--steps 6 --step-seconds 2 --state-mb 8 --max 4 --plan 1:4"
        job = slurm.dmr_fs(("127.0.0.1", port), 2, fs_args, ppn=1)
        # the expand's metrics come when its nodes are held; the decision's once it is answered, after
        decided = b'elastic_decisions_total{action="expand",policy="dmr"}'
        slurm.wait(lambda: decided in _scrape(metrics), timeout=90)
        text = _scrape(metrics).decode()
        assert "elastic_resize_seconds_count" in text and 'kind="expand"' in text, text
        assert 'elastic_decisions_total{action="expand",policy="dmr"} 1.0' in text, text
        slurm.wait_gone(job)
    finally:
        stop_process(proc)
    out = subprocess.run(["slurm-ext", "events", "--json", "--path", str(path), "--job", str(job)],
                         capture_output=True, text=True, check=True)  # fmt: skip
    seen = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [e["kind"] for e in seen]
    assert "decision" in kinds and "expand" in kinds and "commit" in kinds, kinds
    expand = next(e for e in seen if e["kind"] == "expand")
    # the runtime reports its step times (the efficiency feedback's input): 2 s on 2 ranks, then 1 s
    steps = [e["step"] for e in seen if e["kind"] == "decision" and e.get("step")]
    assert steps and all(0.5 < s < 3 for s in steps), steps
    assert expand["old"] == 2 and expand["new"] == 4 and expand["seconds"] > 0 and "nodes" in expand["phases"]
    table = subprocess.run(
        ["slurm-ext", "events", "--path", str(path)], capture_output=True, text=True, check=True
    )
    assert "expand" in table.stdout


def _scrape(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read()

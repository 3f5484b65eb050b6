"""Load on the control service (`slurm-ext bench service`): many applications checking at once.

N clients open their connections together and keep them open, as N running applications' rank 0
would; each then sends ``--requests`` valid checks, one every ``--interval`` seconds from a random
phase (an application checks once per step), and times each answer. The checks are for one real
1-node job with ``min = max``, so every answer must be "no action": anything else, a refused or
dropped connection, or no answer within 10 s is an error. The service is started here as its own
process (``slurm-ext serve`` on a free port), or ``--port P`` uses one already running on this host.
Reported: errors, latency p50/p99 (ms), and the service's CPU seconds and peak RSS during the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from slurm_ext import protocol as p

ANSWER_TIMEOUT = 10.0


class BenchError(RuntimeError):
    """The benchmark cannot run (cluster down, service not reachable)."""


# -- the service process ------------------------------------------------------------------------


def _listener_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:``port`` (from the socket's inode), if we may see it."""
    want = f":{port:04X} "
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if want in cols[1] + " " and cols[3] == "0A":  # 0A: LISTEN
                inode = cols[9]
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) == target for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:
            continue
    return None


def _usage(pid: int) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("VmHWM"))
    return cpu, int(hwm.split()[1]) / 1024


def _start_service(port: int, log: Path) -> subprocess.Popen[bytes]:
    """``slurm-ext serve`` on ``port``, its log (one line per check) into ``log``."""
    cmd = [sys.executable, "-m", "slurm_ext", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            lines = log.read_text(errors="replace").strip().splitlines()
            raise BenchError(f"the service exited: {lines[-1] if lines else proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise BenchError(f"the service did not start listening within 30 s (log: {log})")


# -- the clients ----------------------------------------------------------------------------------
async def _client(
    port: int, check: bytes, requests: int, interval: float, start: asyncio.Event, lat: list[float]
) -> str | None:
    """One application: connect, wait for everyone, then ``requests`` checks. Returns an error or None."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), ANSWER_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        return f"connect: {type(exc).__name__}"
    try:
        await start.wait()
        await asyncio.sleep(random.uniform(0, interval))
        for _ in range(requests):
            t0 = time.perf_counter()
            writer.write(check)
            line = await asyncio.wait_for(reader.readline(), ANSWER_TIMEOUT)
            lat.append(time.perf_counter() - t0)
            msg = p.decode_response(line) if line else None
            if not isinstance(msg, p.Decision) or msg.action != p.ACTION_NONE:
                return f"answer: {type(msg).__name__ if msg else 'closed'}"
            await asyncio.sleep(interval)
        return None
    except (OSError, TimeoutError, p.ProtocolError) as exc:
        return f"request: {type(exc).__name__}"
    finally:
        writer.close()


async def _load(port: int, check: bytes, clients: int, requests: int, interval: float) -> dict[str, Any]:
    start = asyncio.Event()
    lat: list[float] = []
    tasks = [
        asyncio.create_task(_client(port, check, requests, interval, start, lat)) for _ in range(clients)
    ]
    await asyncio.sleep(0.5 + clients / 2000)  # let every client connect first
    t0 = time.perf_counter()
    start.set()
    errors = [e for e in await asyncio.gather(*tasks) if e]
    return {"lat": lat, "errors": errors, "wall": time.perf_counter() - t0}


def run(clients: int, requests: int, interval: float, port: int | None = None) -> dict[str, Any]:
    from slurm_ext.backend import JobRequest
    from slurm_ext.config import load_config
    from slurm_ext.slurm.adapter import SlurmCluster

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < clients + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, clients + 1024), hard))
    slurm = SlurmCluster(slurm_conf=load_config().cluster.slurm_conf)
    try:
        slurm.snapshot()
    except Exception as exc:
        raise BenchError(f"local cluster not reachable ({exc}); run `slurm-ext cluster up`") from None
    proc = None
    if port is None:
        port = p.free_port()
        proc = _start_service(port, Path(tempfile.gettempdir()) / f"bench-service-{port}.log")
    pid = proc.pid if proc else _listener_pid(port)
    job = slurm.submit(JobRequest(nodes=1, name="bench-service", time_limit=600, command="sleep 600",
                                  extra_args=("-o", "/dev/null")))  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (info := slurm.job(job)).is_running:
            if time.monotonic() > deadline:
                raise BenchError(f"job {job} did not start within 60 s")
            time.sleep(0.2)
        nodes = list(info.nodes)
        check = p.Check(job_id=job, current=1, min=1, max=1, nodes=nodes).encode()
        before = _usage(pid) if pid else None
        out = asyncio.run(_load(port, check, clients, requests, interval))
        after = _usage(pid) if pid else None
    finally:
        slurm.cancel(job)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    lat = sorted(out["lat"])
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) > 1 else lat * 99
    return {
        "clients": clients,
        "requests": len(lat),
        "errors": len(out["errors"]),
        "error_kinds": sorted(set(out["errors"])),
        "p50": q[49] if lat else None,
        "p99": q[98] if lat else None,
        "wall_s": out["wall"],
        "service_cpu_s": None if not (before and after) else after[0] - before[0],
        "service_peak_rss_mib": None if not after else after[1],
        "load_avg": os.getloadavg()[0],
    }


def service_cmd(
    clients: Annotated[
        int, typer.Option(help="Concurrent clients (applications), all connected at once")
    ] = 1000,
    requests: Annotated[int, typer.Option(help="Checks per client")] = 5,
    interval: Annotated[float, typer.Option(help="Seconds between one client's checks (one step)")] = 1.0,
    port: Annotated[
        int | None,
        typer.Option(help="Use the service already listening on 127.0.0.1:PORT [default: start one]"),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of a table")
    ] = False,
) -> None:
    """Many applications checking at once: errors, latency p50/p99, the service's CPU and memory."""
    if clients < 1 or requests < 1 or interval < 0 or (port is not None and not 0 < port < 65536):
        typer.secho("error: --clients and --requests must be >= 1, --interval >= 0, --port 1-65535", err=True)
        raise typer.Exit(2)
    try:
        res = run(clients, requests, interval, port)
    except BenchError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    if json_out:
        typer.echo(json.dumps(res))
        return
    from slurm_ext.console import print_table, table

    def fmt(x: float | None, scale: float = 1.0, digits: int = 1) -> str:
        return "-" if x is None else f"{x * scale:.{digits}f}"

    head = ["errors", "p50 ms", "p99 ms", "service CPU s", "service peak RSS MiB", "load"]
    row = [
        res["errors"],
        fmt(res["p50"], 1e3, 2),
        fmt(res["p99"], 1e3, 2),
        fmt(res["service_cpu_s"], digits=2),
        fmt(res["service_peak_rss_mib"]),
        f"{res['load_avg']:.2f}",
    ]
    typer.echo(f"{clients} clients x {requests} checks, one every {interval:g} s")
    print_table(table(head, [row], left=0))
    typer.echo("target for 1,000 clients: 0 errors, p99 <= 20 ms")
    if res["error_kinds"]:
        typer.echo("errors: " + ", ".join(res["error_kinds"]))

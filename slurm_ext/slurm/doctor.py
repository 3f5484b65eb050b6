"""``slurm-ext doctor``: what of the toolkit works on the Slurm it talks to, and the line to change.

Each check reads the live configuration (``scontrol show config``) or runs one harmless command,
and yields one :class:`Finding` per feature: ``ok``, ``off`` (the feature is unavailable or
degraded, the rest works; ``fix`` says the one line to change) or ``fail`` (the control service
cannot work: slurmctld unreachable, the service's user without the rights it needs). It runs as
any user; the exit code is non-zero only on a ``fail``.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated

import typer

from slurm_ext.containers.releases import RELEASES as TESTED
from slurm_ext.errors import SlurmError
from slurm_ext.slurm.commands import SlurmCommands
from slurm_ext.slurm.release import detect_release
from slurm_ext.slurm.settings import MERGE_SELECT, merge_refused, parse_config, scheduler_parameters

OK, OFF, FAIL = "ok", "off", "fail"


@dataclass(frozen=True)
class Finding:
    feature: str
    status: str  # ok | off | fail
    detail: str
    fix: str = ""


def _name(value: str) -> str:
    """'root(0)' -> 'root'."""
    return value.split("(")[0].strip()


def check_config(conf: dict[str, str]) -> list[Finding]:
    """The checks that need only the configuration (pure: unit-tested on recorded configs)."""
    found = []
    params = scheduler_parameters(conf)
    refused = merge_refused(conf)
    if refused is None:
        found.append(Finding("merge expansion", OK, "SchedulerParameters has permit_job_expansion"))
    elif "permit_job_expansion" not in params:
        line = ",".join([*params, "permit_job_expansion"])
        found.append(Finding("merge expansion", OFF, "jobs grow with expander jobs (a second job per growth)",
                             f"SchedulerParameters={line}   (then: scontrol reconfigure)"))  # fmt: skip
    else:
        found.append(Finding("merge expansion", OFF, f"{refused}: jobs grow with expander jobs",
                             f"SelectType={MERGE_SELECT[0]}   (or keep expander jobs)"))  # fmt: skip
    found.append(Finding("expander jobs", OK, "any Slurm: a second job hosts the new ranks"))
    select = conf.get("SelectType", "")
    if select in ("select/linear", "select/cons_tres", "select/cons_res"):
        found.append(Finding("shrink", OK, f"{select}: scontrol update NumNodes releases whole nodes"))
    else:
        found.append(Finding("shrink", OFF, f"{select or 'no SelectType'}: not tested",
                             "SelectType=select/cons_tres"))  # fmt: skip
    sched = conf.get("SchedulerType", "")
    if sched == "sched/backfill":
        found.append(Finding("EJB probe", OK, "sched/backfill: backfill holes exist to bundle jobs into"))
    else:
        why = f"{sched or 'no SchedulerType'}: no backfill holes, EJB bundles nothing"
        found.append(Finding("EJB probe", OFF, why, "SchedulerType=sched/backfill"))
    found.append(Finding("priority boost", OK, f"{conf.get('PriorityType', '?')}: scontrol update Priority= "
                         "(needs operator rights: see 'service rights')"))  # fmt: skip
    acct = conf.get("AccountingStorageType", "")
    if "slurmdbd" in acct:
        found.append(Finding("accounting", OK, f"{acct}: sacct, which the live benchmarks read"))
    else:
        why = f"{acct or 'none'}: no sacct (the live benchmarks read it)"
        found.append(Finding("accounting", OFF, why, "AccountingStorageType=accounting_storage/slurmdbd"))
    return found


def admin_level(cmd: SlurmCommands, user: str) -> str | None:
    """The user's AdminLevel in accounting ('None', 'Operator', 'Administrator'), or None if unknown."""
    try:
        res = cmd.run(["sacctmgr", "-n", "-P", "show", "user", user, "format=AdminLevel"], check=False)
    except SlurmError:
        return None
    lines = res.stdout.split()
    return lines[0] if res.returncode == 0 and lines else None


def check_rights(cmd: SlurmCommands, conf: dict[str, str], user: str, is_service: bool) -> Finding:
    """Whether ``user`` may resize and boost any user's jobs (root, SlurmUser, Operator, Administrator)."""
    slurm_user = _name(conf.get("SlurmUser", "root"))
    if user in ("root", slurm_user):
        return Finding("service rights", OK, f"{user} is {'root' if user == 'root' else 'SlurmUser'}")
    level = admin_level(cmd, user)
    if level in ("Operator", "Administrator"):
        # an Operator resizes any job but submits none as another user: the application's agent
        # (its owner's process) submits its expander jobs on the service's word, and ejb-submit
        # queues the held spares the EJB manager makes its subjobs of
        return Finding("service rights", OK, f"{user} has AdminLevel={level} (other users' expander jobs "
                       "are submitted by their applications' agents, EJB subjobs made of the spares "
                       "ejb-submit queues)")  # fmt: skip
    level_text = f"AdminLevel {level}" if level else "not in Slurm's accounting"
    why = f"{user} cannot resize or boost other users' jobs ({level_text})"
    fix = f"sacctmgr modify user {user} set AdminLevel=Operator   (or run the service as {slurm_user})"
    return Finding("service rights", FAIL if is_service else OFF, why, fix)


def rights_at_start(slurm_conf: Path | None) -> Finding | None:
    """What a daemon checks as it starts: a missing right of its own user (None: fine, or not
    knowable now; slurmctld may be down, and the daemon serves "no action" until it is back)."""
    user = pwd.getpwuid(os.geteuid()).pw_name
    if user == "root":
        return None
    cmd = SlurmCommands(slurm_conf)
    try:
        conf = parse_config(cmd.run(["scontrol", "show", "config"], timeout=15).stdout)
    except SlurmError:
        return None
    found = check_rights(cmd, conf, user, is_service=True)
    return found if found.status == FAIL else None


def check_mpi(cmd: SlurmCommands) -> Finding:
    try:
        res = cmd.run(["srun", "--mpi=list"], check=False)
    except SlurmError as exc:
        return Finding("MPI plugin", OFF, f"srun --mpi=list failed: {exc}", "install slurm-client (srun)")
    if "pmi2" in res.stdout + res.stderr:
        return Finding("MPI plugin", OK, "srun --mpi=pmi2 (dmr-run's default; the MPICH the toolkit uses)")
    return Finding("MPI plugin", OFF, "srun has no pmi2 plugin: dmr-run cannot start ranks",
                   "install Slurm's mpi_pmi2 plugin (Debian: slurm-wlm-basic-plugins)")  # fmt: skip


def check_munge() -> Finding:
    munge, unmunge = shutil.which("munge"), shutil.which("unmunge")
    if munge is None or unmunge is None:
        return Finding("munge across hosts", OFF, "munge/unmunge not installed: remote peers stay unnamed",
                       "apt install munge")  # fmt: skip
    res = subprocess.run(f"{munge} -n | {unmunge}", shell=True, capture_output=True, text=True, timeout=10,
                         check=False)  # fmt: skip
    if res.returncode == 0:
        return Finding("munge across hosts", OK, "a credential made here decodes: remote ranks are named")
    return Finding("munge across hosts", OFF, f"munge -n | unmunge failed: {res.stderr.strip()[:120]}",
                   "start munged (the same /etc/munge/munge.key on every host)")  # fmt: skip


def diagnose(cmd: SlurmCommands, service_user: str | None) -> list[Finding]:
    """Every check, slurmctld first (nothing else can be read without it)."""
    try:
        ping = cmd.run(["scontrol", "ping"], timeout=15, check=False)
        said = (ping.stdout + ping.stderr).strip()
    except SlurmError as exc:
        ping, said = None, str(exc)
    if ping is None or ping.returncode != 0 or "UP" not in ping.stdout:
        fix = "start slurmctld, or point SLURM_CONF at the cluster's slurm.conf"
        return [Finding("slurmctld", FAIL, f"not reachable: {said[:200]}", fix)]
    found = [Finding("slurmctld", OK, ping.stdout.strip().splitlines()[0])]
    release = detect_release(cmd)
    tested = release.name in TESTED
    found.append(Finding("release", OK if tested else OFF, f"Slurm {release}"
                         + ("" if tested else f"; tested: {', '.join(TESTED)}"),
                         "" if tested else "use a tested release, or report what fails"))  # fmt: skip
    conf = parse_config(cmd.run(["scontrol", "show", "config"]).stdout)
    found += check_config(conf)
    found.append(check_mpi(cmd))
    found.append(check_munge())
    user = service_user or pwd.getpwuid(os.geteuid()).pw_name
    found.append(check_rights(cmd, conf, user, is_service=service_user is not None))
    return found


def doctor_cmd(
    service_user: Annotated[
        str | None,
        typer.Option(help="Check this user's rights as the service's (a missing right fails) [default: you]"),
    ] = None,
    slurm_conf: Annotated[
        Path | None, typer.Option(help="The cluster's slurm.conf [default: SLURM_CONF]")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object")] = False,
) -> None:
    """Check the Slurm this toolkit talks to: per feature, whether it works here and the line to change."""
    if service_user is not None:
        try:
            pwd.getpwnam(service_user)
        except KeyError:
            typer.echo(f"error: no user {service_user!r} on this host", err=True)
            raise typer.Exit(2) from None
    found = diagnose(SlurmCommands(slurm_conf), service_user)
    failed = any(f.status == FAIL for f in found)
    if as_json:
        typer.echo(json.dumps({"findings": [asdict(f) for f in found], "ok": not failed}))
    else:
        _print(found, typer.echo)
    raise typer.Exit(1 if failed else 0)


def _print(found: list[Finding], echo: Callable[[str], None]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("feature", "", "here", "to change")
    marks = {OK: "[green]ok[/]", OFF: "[yellow]off[/]", FAIL: "[red]FAIL[/]"}
    for f in found:
        table.add_row(f.feature, marks[f.status], f.detail, f.fix)
    Console(width=max(120, shutil.get_terminal_size().columns)).print(table)
    fails = [f for f in found if f.status == FAIL]
    for f in fails:  # one line each, unwrapped: what a service manager's log shows
        typer.echo(f"doctor: {f.feature}: {f.detail}; to change: {f.fix}", err=True)
    names = ", ".join(f.feature for f in fails)
    echo(f"doctor: the service cannot work here: {names}" if fails else "doctor: the service can work here")

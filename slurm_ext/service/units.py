"""``slurm-ext install-units``: run the control service and the EJB manager at a site, as systemd
services of an unprivileged user.

Writes ``elastic-slurm.service`` and ``ejb-manager.service`` (from ``conf/systemd/*.in``) into the
unit directory, the site's configuration (a copy of ``conf/elastic.yaml``, kept if it exists) and
the state directories the two daemons write (owned by their user). Both units check their user's
rights first (``slurm-ext doctor --service-user``): without Slurm's operator level the service could
not resize other users' jobs, and it says so instead of starting.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from slurm_ext.config import CONF_DIR, DEFAULT_CONFIG, SITE_CONFIG, ConfigError, load_config

UNITS = ("elastic-slurm.service", "ejb-manager.service")
TEMPLATES = CONF_DIR / "systemd"


@dataclass(frozen=True)
class Installed:
    units: list[Path]
    config: Path
    config_written: bool
    state_dirs: list[Path]


def render(name: str, user: str, config: Path, state_dir: Path, host: str) -> str:
    """One unit's text: the template with this site's user, config, state directory and Python."""
    text = (TEMPLATES / f"{name}.in").read_text()
    return text.format(user=user, config=config, state_dir=state_dir, host=host, python=sys.executable)


def install(user: str, unit_dir: Path, config: Path, host: str) -> Installed:
    """Write the config (if missing), the state directories and both units; raises ValueError on
    what the caller must fix (an unknown user, a config that does not load)."""
    try:
        account = pwd.getpwnam(user)
    except KeyError:
        raise ValueError(
            f"no user {user!r}: create it (useradd --system {user}) and give it Slurm's operator level "
            f"(sacctmgr add user {user} account=root AdminLevel=Operator)"
        ) from None
    written = not config.exists()
    if written:
        config.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DEFAULT_CONFIG, config)
        config.chmod(0o644)
    try:
        state_dir = load_config(config).cluster.state_dir
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    dirs = [state_dir / "service", state_dir / "ejb"]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True, mode=0o750)
        os.chown(d, account.pw_uid, account.pw_gid)
    unit_dir.mkdir(parents=True, exist_ok=True)
    units = []
    for name in UNITS:
        path = unit_dir / name
        path.write_text(render(name, user, config, state_dir, host))
        path.chmod(0o644)
        units.append(path)
    return Installed(units, config, written, dirs)


def install_units_cmd(
    user: Annotated[str, typer.Option(help="The unprivileged user both daemons run as")] = "elastic",
    unit_dir: Annotated[Path, typer.Option(help="Where systemd units go")] = Path("/etc/systemd/system"),
    config: Annotated[
        Path, typer.Option(help="The site's configuration (written from the shipped one if missing)")
    ] = SITE_CONFIG,
    host: Annotated[
        str, typer.Option(help="Address both daemons listen on (ranks on nodes reach it)")
    ] = "0.0.0.0",
) -> None:
    """Install systemd units for the control service and the EJB manager, run as an unprivileged user."""
    try:
        done = install(user, unit_dir, config, host)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except PermissionError as exc:
        typer.echo(f"error: {exc} (run install-units as root)", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{'wrote' if done.config_written else 'kept'} the configuration {done.config}")
    for d in done.state_dirs:
        typer.echo(f"state directory {d} (owned by {user})")
    for unit in done.units:
        typer.echo(f"wrote {unit}")
    typer.echo(
        f"next: give {user} Slurm's operator level if it has not (sacctmgr add user {user} account=root "
        f"AdminLevel=Operator), check with `slurm-ext doctor --service-user {user}`, then\n"
        "  systemctl daemon-reload && systemctl enable --now elastic-slurm ejb-manager"
    )

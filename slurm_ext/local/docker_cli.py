"""`slurm-ext cluster up|down|status --docker` and `cluster images`: the compose cluster's commands.

User mistakes (an unknown release, a bad node count, a cluster already up with other settings) exit
with code 2 and one line; failures of Docker or of the cluster exit with 1.
"""

from __future__ import annotations

from typing import NoReturn

import typer

from slurm_ext.containers.cluster import DockerCluster, DockerClusterError
from slurm_ext.containers.images import ImageError, build
from slurm_ext.containers.releases import DEFAULT_RELEASE, RELEASES, UnknownRelease

RELEASE_HELP = f"Slurm release of the containers: {', '.join(RELEASES)}"
USAGE_EXIT = 2


def fail(message: str, code: int = 1) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def _progress(message: str) -> None:
    typer.echo(f"  {message}", err=True)


def _check_release(release: str) -> None:
    if release not in RELEASES:
        fail(f"unknown Slurm release {release!r}; choose one of {', '.join(RELEASES)}", USAGE_EXIT)


def up(release: str | None, nodes: int | None, expansion: bool | None) -> None:
    release = release or DEFAULT_RELEASE
    _check_release(release)
    if nodes is not None and nodes < 1:
        fail(f"--nodes must be at least 1, got {nodes}", USAGE_EXIT)
    cluster = DockerCluster()
    try:
        report = cluster.up(release, nodes or 4, expansion is not False, progress=_progress)
    except DockerClusterError as exc:
        fail(str(exc), USAGE_EXIT if "already up" in str(exc) else 1)
    except (ImageError, UnknownRelease) as exc:
        fail(str(exc))
    if report.image is None:
        typer.echo(f"docker cluster was already up: Slurm {report.release}, {report.nodes} nodes")
    else:
        typer.echo(
            f"docker cluster is up: Slurm {report.release}, {report.nodes} idle nodes "
            f"{report.seconds:.1f} s after docker-compose up (image {report.image.tag})"
        )
    typer.echo(f"run commands with: {' '.join(cluster.exec_prefix())} sinfo")


def down() -> None:
    try:
        count = DockerCluster().down(progress=_progress)
    except DockerClusterError as exc:
        fail(str(exc))
    typer.echo(f"docker cluster is down ({count} containers removed, no network or volume left)")


def status() -> None:
    try:
        typer.echo(DockerCluster().status_text())
    except DockerClusterError as exc:
        fail(str(exc))


def images_cmd(
    release: list[str] = typer.Option(  # noqa: B008
        None, "--release", "-r", help=f"{RELEASE_HELP} (repeatable) [default: all]", show_default=False
    ),
) -> None:
    """Build the dockerized cluster's image of each release, unless an image with its hash exists."""
    for r in release or list(RELEASES):
        _check_release(r)
    for r in release or list(RELEASES):
        try:
            DockerCluster.check_tools()
            image = build(r, _progress)
        except (ImageError, DockerClusterError) as exc:
            fail(str(exc))
        typer.echo(f"{r}: {image.tag} {'built' if image.built else 'cached'} in {image.seconds:.1f} s")

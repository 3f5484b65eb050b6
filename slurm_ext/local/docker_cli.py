"""`slurm-ext cluster up|down|status --docker` and `cluster images`: the compose cluster's commands.

User mistakes (an unknown release, a bad node count, a cluster already up with other settings) exit
with code 2 and one line; failures of Docker or of the cluster exit with 1.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import NoReturn

import typer

from slurm_ext.containers.cluster import DockerCluster, DockerClusterError
from slurm_ext.containers.images import BuiltImage, ImageError, build
from slurm_ext.containers.releases import DEFAULT_RELEASE, RELEASES, UnknownRelease
from slurm_ext.containers.site import SiteSetupError

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


def up(
    release: str | None,
    nodes: int | None,
    expansion: bool | None,
    select: str | None = None,
    cpus_per_node: int | None = None,
    start_units: bool = False,
) -> None:
    release = release or DEFAULT_RELEASE
    _check_release(release)
    if nodes is not None and nodes < 1:
        fail(f"--nodes must be at least 1, got {nodes}", USAGE_EXIT)
    if cpus_per_node is not None and cpus_per_node < 1:
        fail(f"--cpus-per-node must be at least 1, got {cpus_per_node}", USAGE_EXIT)
    cluster = DockerCluster()
    try:
        report = cluster.up(release, nodes or 4, expansion is not False, progress=_progress,
                            select=select or "linear", cpus_per_node=cpus_per_node or 2,
                            start_units=start_units)  # fmt: skip
    except DockerClusterError as exc:
        fail(str(exc), USAGE_EXIT if "already up" in str(exc) else 1)
    except (ImageError, UnknownRelease, SiteSetupError) as exc:
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


# Prints the home directory of user $1 if it exists there; exit 3 if there is no such user.
_HOME = 'e=$(getent passwd "$1") || exit 3; h=$(printf %s "$e" | cut -d: -f6); [ -d "$h" ] && echo "$h"; :'


def exec_argv(container: str, command: list[str], user: str | None = None, workdir: str | None = None,
              tty: bool = False) -> list[str]:  # fmt: skip
    """``docker exec`` of ``command`` in ``container``, as ``user`` (the image's root if None), in
    ``workdir`` (the container's own if None); ``tty``: with a terminal (interactive use)."""
    argv = ["docker", "exec", "-i", *(["-t"] if tty else [])]
    argv += [*(["-u", user] if user else []), *(["-w", workdir] if workdir else [])]
    return [*argv, container, *command]


def exec_(user: str | None, command: list[str]) -> NoReturn:
    """Run ``command`` in the login container as ``user`` (in their home); exits with its code."""
    if not command:
        fail("no command given: slurm-ext cluster exec --docker [--user U] -- CMD...", USAGE_EXIT)
    cluster = DockerCluster()
    try:
        cluster.check_tools()
    except DockerClusterError as exc:
        fail(str(exc))
    if cluster.running_release() is None:
        fail("no dockerized cluster is up: start one with `slurm-ext cluster up --docker`")
    workdir = None
    if user is not None:
        res = cluster.run("sh", "-c", _HOME, "sh", user)
        if res.returncode == 3:
            fail(f"no user {user!r} in the login container", USAGE_EXIT)
        if res.returncode != 0:
            fail(f"cannot look up {user!r} in the login container: {res.stderr.strip()[:300]}")
        workdir = res.stdout.strip() or None
    tty = sys.stdin.isatty() and sys.stdout.isatty()
    argv = exec_argv(cluster.container("login"), command, user, workdir, tty)
    raise typer.Exit(subprocess.run(argv, check=False).returncode)


def run_in_login(args: list[str], workdir: str, quiet: bool = False) -> NoReturn:
    """A command of this toolkit (e.g. a demo) in the login container, where the repository is
    mounted, as root in ``workdir``, saying so first (on stderr if ``quiet``); exits with its code."""
    cluster = DockerCluster()
    if cluster.running_release() is None:
        fail("the dockerized cluster is not up (`slurm-ext cluster up --docker`)", USAGE_EXIT)
    login = cluster.container("login")
    typer.echo(f"running in {login} (Slurm {cluster.running_release()}): {' '.join(args)}", err=quiet)
    raise typer.Exit(subprocess.run(exec_argv(login, args, workdir=workdir), check=False).returncode)


def images_cmd(
    release: list[str] = typer.Option(  # noqa: B008
        None, "--release", "-r", help=f"{RELEASE_HELP} (repeatable) [default: all]", show_default=False
    ),
    jobs: int = typer.Option(3, "--jobs", "-j", help="releases built at the same time"),
) -> None:
    """Build the dockerized cluster's image of each release, unless an image with its hash exists.

    Several releases are built at once (``--jobs``): a build mostly waits on Debian's archive."""
    releases = list(dict.fromkeys(release or RELEASES))
    for r in releases:
        _check_release(r)
    if jobs < 1:
        fail(f"--jobs must be at least 1, got {jobs}", USAGE_EXIT)
    try:
        DockerCluster.check_tools()
    except DockerClusterError as exc:
        fail(str(exc))

    def one(r: str) -> BuiltImage:
        return build(r, lambda message: _progress(f"{r}: {message}" if len(releases) > 1 else message))

    failed: list[str] = []
    with ThreadPoolExecutor(max_workers=min(jobs, len(releases))) as pool:
        futures = {r: pool.submit(one, r) for r in releases}
        for r, future in futures.items():
            try:
                image = future.result()
            except (ImageError, DockerClusterError) as exc:
                failed.append(f"{r}: {exc}")
                continue
            typer.echo(f"{r}: {image.tag} {'built' if image.built else 'cached'} in {image.seconds:.1f} s")
    if failed:
        fail("\n".join(failed))

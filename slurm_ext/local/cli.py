"""`slurm-ext cluster ...`: thin CLI over slurm_ext.local.cluster."""

from __future__ import annotations

from typing import Annotated

import typer

from slurm_ext.config import SELECTS, ConfigError, load_config
from slurm_ext.containers import site
from slurm_ext.local import docker_cli
from slurm_ext.local.cluster import ClusterError, LocalCluster, UsageError
from slurm_ext.local.daemons import DaemonError
from slurm_ext.local.prereqs import PrerequisiteError

cluster_app = typer.Typer(
    help="A real multi-node Slurm cluster on this host (for tests and demos).", no_args_is_help=True
)

NodesOption = Annotated[
    int | None, typer.Option("--nodes", "-N", help="Number of slurmd nodes [default: conf; 4 with --docker]")
]
DockerOption = Annotated[
    bool, typer.Option("--docker", help="The dockerized cluster (docker/: one container per daemon and node)")
]
ReleaseOption = Annotated[
    str | None,
    typer.Option("--release", "-r", help=f"With --docker: {docker_cli.RELEASE_HELP} [default: 22.05]"),
]


def _cluster() -> LocalCluster:
    try:
        return LocalCluster(load_config().cluster)
    except ConfigError as exc:
        _fail(str(exc))
        raise  # unreachable


def _fail(message: str, code: int = 1) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def _progress(message: str) -> None:
    typer.echo(f"  {message}", err=True)


@cluster_app.command()
def up(
    nodes: NodesOption = None,
    cpus_per_node: Annotated[
        int | None, typer.Option("--cpus-per-node", "-c", help="CPUs of each node [default: conf]")
    ] = None,
    expansion: Annotated[
        bool | None,
        typer.Option(
            "--expansion/--no-expansion",
            help="SchedulerParameters=permit_job_expansion; --no-expansion is Slurm's stock setting "
            "(jobs then grow through expander jobs) [default: conf]",
            show_default=False,
        ),
    ] = None,
    select: Annotated[
        str | None,
        typer.Option(
            "--select",
            help="SelectType: linear (whole nodes) or cons_tres (Slurm's default since 23.02: small jobs "
            "share nodes, CR_Core) [default: conf; linear with --docker]",
            show_default=False,
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="With --docker: 'site' is a site's cluster (--select cons_tres, 4 CPUs per node unless "
            "given: two partitions sharing a node, accounting enforced, users alice and bob, the "
            "service's user elastic) [default: the toolkit's test cluster]",
            show_default=False,
        ),
    ] = None,
    start_units: Annotated[
        bool,
        typer.Option(
            "--start-units",
            help="With --profile site: start the control service and the EJB manager as the service's "
            "user elastic, by their systemd units' commands, as a site runs them",
        ),
    ] = False,
    docker: DockerOption = False,
    release: ReleaseOption = None,
) -> None:
    """Start munged, MariaDB, slurmdbd, slurmctld and N slurmd; wait until all nodes are idle.

    With --docker: the same in containers (MariaDB, slurmdbd, slurmctld, N nodes, login), any release.
    """
    if profile is not None:
        if profile != "site":
            _fail(f"--profile must be 'site', got {profile!r}", code=2)
        if not docker:
            _fail("--profile site needs --docker (the site's users and accounting live in the containers)", 2)
        if select not in (None, "cons_tres"):
            _fail("--profile site is --select cons_tres: drop --select linear", code=2)
        select, cpus_per_node = "cons_tres", cpus_per_node or site.CPUS_PER_NODE
    if select is not None and select not in SELECTS:
        _fail(f"--select must be one of {', '.join(SELECTS)}, got {select!r}", code=2)
    if start_units and profile != "site":
        _fail("--start-units needs --docker --profile site (the units run as the site's service user)", 2)
    if docker:
        docker_cli.up(release, nodes, expansion, select, cpus_per_node, start_units)
        return
    if release is not None:
        docker_cli.fail("--release needs --docker (the local cluster runs the installed Slurm)", 2)
    cluster = _cluster()
    try:
        report = cluster.up(
            nodes, progress=_progress, expansion=expansion, cpus_per_node=cpus_per_node, select=select
        )
    except UsageError as exc:
        _fail(str(exc), code=2)
    except (PrerequisiteError, ClusterError, DaemonError) as exc:
        _fail(str(exc))
    if report.already_running:
        typer.echo(f"local cluster was already up: {report.nodes} nodes responding")
    else:
        typer.echo(f"local cluster is up: {report.nodes} idle nodes after {report.seconds:.1f} s")
    typer.echo(f"SLURM_CONF={cluster.cfg.slurm_conf}")


@cluster_app.command()
def down(docker: DockerOption = False) -> None:
    """Cancel all jobs and stop every daemon `cluster up` started (by PID).

    With --docker: remove the dockerized cluster's containers, network and volumes.
    """
    if docker:
        docker_cli.down()
        return
    cluster = _cluster()
    try:
        stopped = cluster.down(progress=_progress)
    except DaemonError as exc:
        _fail(str(exc))
    typer.echo(f"local cluster is down ({len(stopped)} processes stopped)")


@cluster_app.command()
def status(docker: DockerOption = False) -> None:
    """Print the daemons, nodes and jobs of the local cluster (--docker: of the dockerized one)."""
    if docker:
        docker_cli.status()
        return
    typer.echo(_cluster().status_text())


@cluster_app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_cmd(
    ctx: typer.Context,
    docker: DockerOption = False,
    user: Annotated[
        str | None,
        typer.Option(
            "--user", "-u", help="Run as this user of the containers, in their home [default: root]"
        ),
    ] = None,
) -> None:
    """Run a command in the dockerized cluster's login container: `--docker [--user U] -- CMD...`.

    Its exit code is this command's. An unknown user is an error of one line (exit 2). Example:
    `slurm-ext cluster exec --docker --user alice -- sbatch -N 1 --wrap hostname`.
    """
    if not docker:
        _fail("cluster exec needs --docker (on this host, run the command itself: runuser -u U -- CMD)", 2)
    docker_cli.exec_(user, list(ctx.args))


cluster_app.command("images")(docker_cli.images_cmd)

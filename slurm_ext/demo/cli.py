"""`slurm-ext demo`."""

from __future__ import annotations

from pathlib import Path

import typer

from slurm_ext.cli_options import user_exists
from slurm_ext.config import load_config
from slurm_ext.errors import SlurmError
from slurm_ext.slurm import SlurmCluster


def demo_cmd(
    resize_only: bool = typer.Option(False, "--resize-only", help="Only the adapter part (no MPI app)."),
    expand_strategy: str = typer.Option(
        "auto", help="How the service grows FS: merge, expander or auto (merge where Slurm permits it)"
    ),
    docker: bool = typer.Option(
        False,
        "--docker",
        help="Run the demo in the dockerized cluster's login container (cluster up --docker)",
    ),
    service_host: str = typer.Option(
        "127.0.0.1", help="Address at which the nodes reach the control service this command starts"
    ),
    workdir: Path | None = typer.Option(  # noqa: B008
        None,
        help="Directory for the app's job script and output, shared with the nodes [default: a temp dir]",
    ),
    app: str = typer.Option(
        "python", help="The malleable app: python (Flexible Sleep, mpi4py), c or fortran (Jacobi on libdmr)"
    ),
    user: str | None = typer.Option(
        None,
        "--user",
        help="Submit the app and the other jobs as this user, the service staying this command's "
        "(root): as at a site [default: this command's user]",
    ),
) -> None:
    """Show elasticity on the local cluster, narrated.

    Part 1: a running job shrunk and expanded through the Slurm adapter.
    Part 2: a malleable app under the DMR control service (Flexible Sleep, or Jacobi in C or
    Fortran): it grows on the idle cluster, shrinks so a queued rigid job can start, and finishes
    with its state intact.
    """
    from slurm_ext.demo.malleable import APPS, free_nodes, malleable_demo
    from slurm_ext.demo.resize import resize_demo, wait_until
    from slurm_ext.service.controller import STRATEGIES

    if expand_strategy not in STRATEGIES:
        typer.secho(f"error: --expand-strategy must be one of {', '.join(STRATEGIES)}", err=True)
        raise typer.Exit(2)
    if app not in APPS:
        typer.secho(f"error: --app must be one of {', '.join(APPS)}", err=True)
        raise typer.Exit(2)
    if user is not None and not docker and not user_exists(user):
        typer.secho(f"error: --user {user}: no such user here", err=True)
        raise typer.Exit(2)
    if docker:
        _in_login_container(resize_only, expand_strategy, app, user)
        return

    conf = load_config().cluster.slurm_conf
    # Where the configured file does not exist (e.g. in a container), Slurm's own default is used.
    slurm = SlurmCluster(conf if conf.exists() else None)
    try:
        typer.secho("== 1. resizing a running job through the Slurm adapter", bold=True)
        partition, size = default_partition(slurm)  # where the demo's jobs go (a site has several)
        start = min(4, size)
        if slurm.expansion_permitted():
            resize_demo(slurm, typer.echo, start=start, sizes=(2, 1, 2, start))
        else:
            typer.echo("permit_job_expansion is off: shrinking only (the service grows FS by expander jobs)")
            resize_demo(slurm, typer.echo, start=start, sizes=(2, 1))
        if not resize_only:
            typer.secho("== 2. a malleable MPI app under the DMR control service", bold=True)
            # part 2 needs 3 idle nodes (FS at 2, a filler) and takes up to 6; other users' jobs
            # may hold the rest of the partition
            wait_until(lambda: free_nodes(slurm, partition) >= 3, 120, "3 idle nodes")
            free = free_nodes(slurm, partition)
            result = malleable_demo(
                slurm,
                typer.echo,
                max_nodes=4 if free >= 6 else max(2, free - 2),  # room for a filler and a rigid job
                strategy=expand_strategy,
                host=service_host,
                workdir=workdir,
                app=app,
                user=user,
                partition=partition,
            )
            if not result["ok"]:
                raise typer.Exit(1)
    except (SlurmError, RuntimeError, TimeoutError) as exc:
        typer.secho(
            f"error: {exc} (is the cluster up? `slurm-ext cluster up`)", fg=typer.colors.RED, err=True
        )
        raise typer.Exit(1) from exc


def default_partition(slurm: SlurmCluster) -> tuple[str, int]:
    """Slurm's default partition and its node count (the nodes' partitions as the adapter reads
    them); ("", every node) where sinfo names none."""
    default = slurm.default_partition()  # where the demo's jobs go: they ask for no partition
    if default:
        return default, len(slurm.partitions().get(default, ()))
    return "", slurm.snapshot().total_nodes


def _in_login_container(resize_only: bool, expand_strategy: str, app: str, user: str | None) -> None:
    """``slurm-ext demo`` inside the login container: the nodes reach the service at the container's
    host name, and FS's files go to the volume every node mounts (the jobs' working directory too: a
    resize may write files there)."""
    from slurm_ext.containers.compose import SHARED
    from slurm_ext.local.docker_cli import run_in_login

    args = ["python3", "-m", "slurm_ext", "demo", "--expand-strategy", expand_strategy, "--app", app]
    args += ["--service-host", "login", "--workdir", SHARED] + (["--resize-only"] if resize_only else [])
    args += ["--user", user] if user else []
    run_in_login(args, SHARED)

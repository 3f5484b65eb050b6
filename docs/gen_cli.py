"""Render every command's ``--help`` into ``reference/cli.md``.

The ``mkdocs-gen-files`` plugin runs this at build time (``mkdocs.yml``), so the page always shows
the help of the code being documented. ``python docs/gen_cli.py`` prints the page instead.

The typer apps (``slurm-ext``, ``ejb``) are walked as click command trees; the argparse commands
(``ejb-submit``, ``dmr-run``, ``dmr-config``) are run in-process with ``--help``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 100  # columns of the rendered help, whatever the terminal

HEADER = """\
# Command-line reference

Generated from the commands themselves (`docs/gen_cli.py` runs each one's `--help` when the site is
built). Guides: [Python](../guides/python.md), [C and Fortran](../guides/c-fortran.md),
[ejb-submit](../users/ejb-submit.md), [the service](../admin/service.md),
[the simulator](../simulator/index.md).

| command | for |
|---|---|
| [`slurm-ext`](#slurm-ext) | admins and experiments: clusters, the service, the simulator, benchmarks |
| [`ejb`](#ejb) | Elastic Job Bundling: the manager, status, simulation (also `slurm-ext ejb`) |
| [`ejb-submit`](#ejb-submit) | users: submit a job as with sbatch, bundled by EJB where it helps |
| [`dmr-run`](#dmr-run) | users: run a malleable MPI application in a batch script |
| [`dmr-config`](#dmr-config) | developers: compiler and linker flags for libdmr |
"""


def _block(title: str, level: int, text: str) -> str:
    anchor = title.replace(" ", "-")
    return f"{'#' * level} `{title}` {{#{anchor}}}\n\n```text\n{text.rstrip()}\n```\n"


def _walk_click(cmd: Any, path: list[str], parent: Any, skip: set[str]) -> Iterator[tuple[str, str]]:
    """(command path, help text) for a click command and every subcommand below it."""
    if hasattr(cmd, "rich_markup_mode"):
        cmd.rich_markup_mode = None  # typer's plain (click) help, not rich panels
    ctx = cmd.context_class(
        cmd, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )
    yield " ".join(path), cmd.get_help(ctx)
    for name in getattr(cmd, "list_commands", lambda _ctx: [])(ctx):
        sub = cmd.get_command(ctx, name)
        if sub is None or sub.hidden or " ".join([*path, name]) in skip:
            continue
        yield from _walk_click(sub, [*path, name], ctx, skip)


def _typer_sections(app: Any, name: str, skip: set[str]) -> str:
    import typer.main

    out = []
    for path, text in _walk_click(typer.main.get_command(app), [name], None, skip):
        out.append(_block(path, 2 if path == name else 3, text))
    return "\n".join(out)


def _argparse_help(main: Callable[[list[str]], int | None]) -> str:
    """What ``main(["--help"])`` prints (argparse exits; ejb-submit returns)."""
    buf = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            main(["--help"])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return buf.getvalue()


def render() -> str:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # document this checkout's commands
    from dmr.agent import main as dmr_run
    from dmr.toolchain import main as dmr_config
    from ejb.cli import app as ejb_app
    from ejb.submit import main as ejb_submit
    from slurm_ext.cli import app as slurm_ext_app

    parts = [
        HEADER,
        _typer_sections(slurm_ext_app, "slurm-ext", skip={"slurm-ext ejb"}),
        "`slurm-ext ejb ...` is the `ejb` command below, under the `slurm-ext` tree.\n",
        _typer_sections(ejb_app, "ejb", skip=set()),
        _block("ejb-submit", 2, _argparse_help(ejb_submit)),
        _block("dmr-run", 2, _argparse_help(dmr_run)),
        _block("dmr-config", 2, _argparse_help(dmr_config)),
    ]
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
else:  # run by mkdocs-gen-files during a build
    import mkdocs_gen_files

    with mkdocs_gen_files.open("reference/cli.md", "w") as f:
        f.write(render())

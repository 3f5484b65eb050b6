"""Commands other packages add to ``slurm-ext`` through entry points, so that ``slurm_ext`` never
imports them (imports flow from ``ejb`` to ``slurm_ext`` only).

Two groups use it: ``slurm_ext.commands`` (sub-apps of ``slurm-ext``, :mod:`slurm_ext.cli`) and
``slurm_ext.reproduce`` (papers' reproductions under ``slurm-ext reproduce``,
:mod:`slurm_ext.reproduce`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib.metadata import EntryPoint

import typer


def command_names(target: typer.Typer) -> set[str]:
    """Names of ``target``'s commands and groups (a plugin may not take one of them)."""
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in target.registered_commands}
    return names | {g.name or "" for g in target.registered_groups}


def add_plugins(target: typer.Typer, plugins: Iterable[EntryPoint]) -> list[str]:
    """Add each entry point's Typer app (or command function) to ``target`` under the entry point's
    name; return the names added. A plugin that fails to load, or whose name is taken, is skipped
    with one warning line on stderr: ``slurm-ext cluster ...`` must work even if a plugin is broken."""
    added = []
    for ep in plugins:
        if ep.name in command_names(target):
            continue  # the same package seen twice on the path, or a clash with a built-in command
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 -- any import error of a plugin
            print(f"warning: slurm-ext plugin {ep.name!r} ({ep.value}) not loaded: {exc}", file=sys.stderr)
            continue
        if isinstance(obj, typer.Typer):
            target.add_typer(obj, name=ep.name)
        elif callable(obj):
            target.command(ep.name)(obj)
        else:
            print(f"warning: slurm-ext plugin {ep.name!r} ({ep.value}) is not a command", file=sys.stderr)
            continue
        added.append(ep.name)
    return added

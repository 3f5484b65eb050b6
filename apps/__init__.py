"""The malleable applications of paper 002 (FS, CG, Jacobi, N-body) on ``dmr.Malleable``.

The folder is ``apps/``; it is installed as the package ``dmr_apps`` (``pyproject.toml``), a name
that cannot clash with a user's own ``apps``. Jobs run them as ``python -m dmr_apps.fs`` or by path.
"""

from pathlib import Path


def script(name: str) -> Path:
    """The file of app ``name`` (``fs``, ``cg``, ``jacobi``, ``nbody``), for scripts that run it by path."""
    path = Path(__file__).with_name(f"{name}.py")
    if not path.is_file():
        raise ValueError(f"no app named {name!r}")
    return path

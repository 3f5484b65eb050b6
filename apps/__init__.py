"""The malleable applications of paper 002 (FS, CG, Jacobi, N-body) on ``dmr.Malleable``, and
Jacobi in C and Fortran on libdmr (``c/jacobi.c``, ``fortran/jacobi.f90``).

The folder is ``apps/``; it is installed as the package ``dmr_apps`` (``pyproject.toml``), a name
that cannot clash with a user's own ``apps``. Jobs run them as ``python -m dmr_apps.fs`` or by path.
"""

from pathlib import Path

# the same problems through libdmr (dmr.h): apps/c/<name>.c and apps/fortran/<name>.f90
NATIVE_APPS = {"c": ("jacobi",), "fortran": ("jacobi",)}
SUFFIX = {"c": ".c", "fortran": ".f90"}


def script(name: str) -> Path:
    """The file of app ``name`` (``fs``, ``cg``, ``jacobi``, ``nbody``), for scripts that run it by path."""
    path = Path(__file__).with_name(f"{name}.py")
    if not path.is_file():
        raise ValueError(f"no app named {name!r}")
    return path


def build(name: str, language: str, out_dir: Path) -> Path:
    """Compile the C or Fortran version of app ``name`` into ``out_dir``: the program ``<name>_c``
    or ``<name>_f`` (``dmr-config``'s flags, as the docs show)."""
    from dmr.toolchain import compile_program

    if name not in NATIVE_APPS.get(language, ()):
        known = ", ".join(f"{n} ({lang})" for lang, names in NATIVE_APPS.items() for n in names)
        raise ValueError(f"no {language} app named {name!r} (there are: {known})")
    source = Path(__file__).parent / language / f"{name}{SUFFIX[language]}"
    return compile_program(source, Path(out_dir) / f"{name}_{language[0]}")

"""``dmr-config``: how C, C++ and Fortran MPI programs compile and link with libdmr (``dmr.h``).

    mpicc app.c -o app $(dmr-config --cflags --libs)
    gfortran $(dmr-config --fsource) app.f90 -o app $(dmr-config --fflags --flibs)

Prints the flags asked for on one line, in the order asked, like ``pkg-config`` (whose file,
``dmr.pc``, lives in ``dmr-config --pkgconfigdir``). Paths are where pip put this package.

The MPI is the ``mpich`` wheel's (the one the toolkit runs with under Slurm): C programs use its
``mpicc``. That wheel has no Fortran bindings, so Fortran programs take MPICH's from Debian's
``libmpich-dev`` (the ``mpi`` module and the static ``libmpichfort.a``) and link them against the
wheel's ``libmpi.so.12``: one MPI library in the process, through the MPICH ABI. Other MPICH-ABI
bindings can be named with ``DMR_MPIFORT_INCLUDE`` (folder of ``mpi.mod``) and ``DMR_MPIFORT_LIB``.

This module also says how libdmr itself is built (:func:`build_settings`, used by ``setup.py``), and
builds it for a source checkout that pip did not install (``dmr-config --build DIR``, then
``DMR_LIBDIR=DIR``: the dockerized cluster does this).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
SOURCE = HERE / "src" / "libdmr.c"
FORTRAN_SOURCE = HERE / "fortran" / "dmr.f90"
VERSION = "0.1.0"
LIBRARY_NAME = "libdmr.so"


class ToolchainError(RuntimeError):
    """A compiler, library or binding is missing, or a compilation failed (the message says which)."""


def lib_dir() -> Path:
    """Where libdmr.so is: ``DMR_LIBDIR`` (a library built with ``--build``), else the package's."""
    return Path(os.environ.get("DMR_LIBDIR") or HERE / "lib")


def library() -> Path:
    return lib_dir() / LIBRARY_NAME


# -- the MPI ----------------------------------------------------------------------------------
def mpich_file(suffix: str) -> Path | None:
    """A file of the installed ``mpich`` wheel whose path ends with ``suffix`` (None without it)."""
    try:
        dist = metadata.distribution("mpich")
    except metadata.PackageNotFoundError:
        return None
    found = next((f for f in dist.files or [] if str(f).endswith(suffix)), None)
    return Path(str(dist.locate_file(found))).resolve() if found else None


def compiler(name: str = "mpicc") -> str:
    """``$MPICC`` (``$FC`` for gfortran), else the one beside this Python (the mpich wheel's), else PATH."""
    env = os.environ.get("FC" if name == "gfortran" else name.upper())
    beside = Path(sys.executable).parent / name
    found = env or (str(beside) if beside.exists() else shutil.which(name))
    if not found:
        hint = "apt-get install gfortran" if name == "gfortran" else "pip install mpich"
        raise ToolchainError(f"{name} not found ({hint})")
    return found


def fortran_mpi() -> tuple[Path, Path]:
    """(folder of MPICH's ``mpi.mod``, its static ``libmpichfort.a``): ``DMR_MPIFORT_INCLUDE`` and
    ``DMR_MPIFORT_LIB``, else where Debian's MPICH Fortran wrapper (``mpif90.mpich -show``) says
    they are (the folders differ between Debian releases)."""
    include, lib = os.environ.get("DMR_MPIFORT_INCLUDE", ""), os.environ.get("DMR_MPIFORT_LIB", "")
    dirs: list[str] = []
    for wrapper in ("mpif90.mpich", "mpifort.mpich"):
        if shutil.which(wrapper):
            shown = subprocess.run([wrapper, "-show"], capture_output=True, text=True, check=False).stdout
            dirs = [w[2:] for w in shown.split() if w.startswith(("-I", "-L"))]
            break
    arch = sysconfig.get_config_var("MULTIARCH") or "*"
    dirs += [f"/usr/include/{arch}/mpich", f"/usr/lib/{arch}/mpich/include", f"/usr/lib/{arch}/mpich/lib",
             f"/usr/lib/{arch}"]  # fmt: skip
    include = include or next((d for d in dirs if Path(d, "mpi.mod").is_file()), "")
    archives = (Path(d, "libmpichfort.a") for d in dirs)
    lib = lib or str(next((a for a in archives if a.is_file()), ""))
    if not include or not lib:
        raise ToolchainError(
            "MPICH's Fortran bindings not found: apt-get install libmpich-dev "
            "(or set DMR_MPIFORT_INCLUDE and DMR_MPIFORT_LIB)"
        )
    return Path(include), Path(lib)


def libmpi() -> Path:
    found = mpich_file("libmpi.so.12")
    if found is None:
        raise ToolchainError("the mpich wheel's libmpi.so.12 not found (pip install mpich)")
    return found


# -- flags ------------------------------------------------------------------------------------
def flags(name: str) -> list[str]:
    """The words one option of ``dmr-config`` prints."""
    lib = lib_dir()
    if name == "cflags":
        return [f"-I{INCLUDE}"]
    if name == "libs":
        return [f"-L{lib}", f"-Wl,-rpath,{lib}", "-ldmr"]
    if name == "fflags":
        include, _ = fortran_mpi()
        return [f"-I{include}", "-fallow-argument-mismatch"]
    if name == "flibs":
        _, fort = fortran_mpi()
        mpi = libmpi().parent
        return [str(fort), f"-L{mpi}", f"-Wl,-rpath,{mpi}", "-l:libmpi.so.12", *flags("libs")]
    table = {
        "fsource": [str(FORTRAN_SOURCE)],
        "prefix": [str(HERE)],
        "includedir": [str(INCLUDE)],
        "libdir": [str(lib)],
        "pkgconfigdir": [str(HERE / "lib" / "pkgconfig")],
        "version": [VERSION],
    }
    return table[name]


# -- building ---------------------------------------------------------------------------------
def build_settings() -> dict[str, Any]:
    """How libdmr is compiled, as ``setuptools.Extension`` keywords: it embeds this Python (its
    libpython; ``DMR_PYTHON`` defaults to this interpreter) and uses the mpich wheel's ``mpi.h``."""
    libpython = sysconfig.get_config_var("LIBDIR")
    header = mpich_file("include/mpi.h")
    return {
        "sources": [str(SOURCE)],
        "include_dirs": [str(INCLUDE), *([str(header.parent)] if header else [])],
        "define_macros": [("DMR_PYTHON", json.dumps(sys.executable))],
        "libraries": [f"python{sysconfig.get_config_var('LDVERSION')}"],
        "library_dirs": [libpython],
        "runtime_library_dirs": [libpython],
        "extra_compile_args": ["-O2", "-Wall"],
    }


def build_library(dest: Path) -> Path:
    """Compile libdmr for this interpreter into ``dest`` (where pip did not: a source checkout)."""
    s = build_settings()
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / LIBRARY_NAME
    building = dest / f".{LIBRARY_NAME}.{os.getpid()}"  # renamed when done: two builds never mix
    cc = sysconfig.get_config_var("CC") or "cc"
    cmd = [
        *cc.split(), "-shared", "-fPIC", *s["extra_compile_args"],
        *(f"-I{d}" for d in [*s["include_dirs"], sysconfig.get_paths()["include"]]),
        *(f"-D{k}={v}" for k, v in s["define_macros"]),
        *s["sources"], "-o", str(building),
        *(f"-L{d}" for d in s["library_dirs"]), *(f"-Wl,-rpath,{d}" for d in s["runtime_library_dirs"]),
        *(f"-l{lib}" for lib in s["libraries"]),
    ]  # fmt: skip
    _run(cmd)
    os.replace(building, out)
    return out


def compile_program(source: Path, out: Path, extra: tuple[str, ...] = ()) -> Path:
    """Compile and link one C (``.c``) or Fortran (``.f90``) program with libdmr, as the docs show."""
    if source.suffix == ".f90":
        # the module is compiled with the program, its .mod file next to the program
        cmd = [compiler("gfortran"), "-O2", f"-J{out.parent}", str(FORTRAN_SOURCE), str(source),
               "-o", str(out), *flags("fflags"), *flags("flibs"), *extra]  # fmt: skip
    else:
        cmd = [compiler(), "-O2", str(source), "-o", str(out), *flags("cflags"), *flags("libs"), "-lm",
               *extra]  # fmt: skip
    _run(cmd)
    return out


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ToolchainError(f"{' '.join(cmd)} failed:\n{res.stderr.strip()}")


# -- CLI --------------------------------------------------------------------------------------
OPTIONS = (
    ("cflags", "C/C++ preprocessor flags: where dmr.h is"),
    ("libs", "C/C++ linker flags: libdmr and its run-time path"),
    ("fflags", "Fortran flags: where MPICH's `mpi` module is (Debian's libmpich-dev)"),
    ("flibs", "Fortran linker flags: MPICH's Fortran bindings, the mpich wheel's libmpi, libdmr"),
    ("fsource", "the source of the Fortran module `dmr` (compile it with the program)"),
    ("prefix", "the folder of the installed dmr package"),
    ("includedir", "the folder of dmr.h"),
    ("libdir", "the folder of libdmr.so"),
    ("pkgconfigdir", "the folder of dmr.pc (for PKG_CONFIG_PATH)"),
    ("version", "the version of libdmr"),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="dmr-config",
        description="Print the flags to compile and link MPI programs with libdmr (dmr.h). "
        "Example: mpicc app.c -o app $(dmr-config --cflags --libs)",
    )
    for name, what in OPTIONS:
        ap.add_argument(f"--{name}", dest="wanted", action="append_const", const=name, help=what)
    ap.add_argument(
        "--build", metavar="DIR", type=Path,
        help="compile libdmr for this Python into DIR (a source checkout pip did not install); "
        "then set DMR_LIBDIR=DIR",
    )  # fmt: skip
    args = ap.parse_args(argv)
    try:
        if args.build is not None:
            print(build_library(args.build))
            return 0
        if not args.wanted:
            ap.print_usage(sys.stderr)
            print("dmr-config: error: say which flags, e.g. --cflags --libs", file=sys.stderr)
            return 2
        if {"libs", "flibs"} & set(args.wanted) and not library().exists():
            raise ToolchainError(
                f"{library()} was not built (no C compiler when the package was installed?): install "
                "a C compiler and reinstall the package, or run `dmr-config --build DIR` and set DMR_LIBDIR"
            )
        print(" ".join(word for name in args.wanted for word in flags(name)))
    except ToolchainError as exc:
        print(f"dmr-config: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""libdmr (dmr.h) and the Fortran module with real ranks, no Slurm: programs build with dmr-config,
calls answer or fail cleanly, the C and Fortran Jacobi check their grids."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from dmr.toolchain import compile_program, compiler, flags, library
from dmr_apps import build

from .conftest import HERE, MPIEXEC

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if MPIEXEC is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    assert library().exists(), "libdmr.so was not built by the install"
    return tmp_path_factory.mktemp("c-bin")


def mpiexec(ranks: int, program: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB")}
    env["DMR_SERVICE"] = "127.0.0.1:1"
    cmd = [str(MPIEXEC), "-n", str(ranks), str(program), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=HERE)


def test_dmr_config_flags_compile_a_program_as_the_readme_shows(bin_dir: Path) -> None:
    flags = subprocess.run(["dmr-config", "--cflags", "--libs"], capture_output=True, text=True, check=True)
    mpicc = shutil.which("mpicc")
    assert mpicc is not None
    out = bin_dir / "shown"
    cmd = f"{mpicc} {HERE / 'prog_c_api.c'} -o {out} {flags.stdout.strip()}"
    subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True)
    pkg = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "dmr"], capture_output=True, text=True,
        env={**os.environ, "PKG_CONFIG_PATH": subprocess.run(
            ["dmr-config", "--pkgconfigdir"], capture_output=True, text=True, check=True).stdout.strip()},
    )  # fmt: skip
    if shutil.which("pkg-config"):
        assert pkg.returncode == 0 and "-ldmr" in pkg.stdout, pkg.stderr


@pytest.mark.parametrize("ranks", [1, 3])
def test_wrong_calls_get_error_codes_and_right_ones_no_action(bin_dir: Path, ranks: int) -> None:
    prog = compile_program(HERE / "prog_c_api.c", bin_dir / "prog_c_api")
    res = mpiexec(ranks, prog)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.split()[1::2]) == [str(r) for r in range(ranks)], res.stdout
    # argument errors are printed once (rank 0), with the runtime's own words
    assert res.stderr.count("min_procs (4) > max_procs (2)") == 1, res.stderr
    # outside a Slurm job: one warning, the program goes on
    assert res.stderr.count("not in a Slurm job") == 1, res.stderr


@pytest.mark.parametrize("language", ["c", "fortran"])
@pytest.mark.parametrize("ranks", [1, 3])
def test_jacobi_checks_its_own_result(bin_dir: Path, ranks: int, language: str) -> None:
    prog = build("jacobi", language, bin_dir)
    res = mpiexec(ranks, prog, "--n", "40", "--steps", "3", "--sweeps", "7", "--max", "4")
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("JACOBI_RESULT "))
    result = json.loads(line.removeprefix("JACOBI_RESULT "))
    assert res.returncode == 0 and result["ok"] and result["final_size"] == ranks, res.stderr
    assert result["max_diff"] == 0 and result["language"] == language


@pytest.mark.parametrize("language", ["c", "fortran"])
def test_jacobi_refuses_bad_options_with_exit_code_2(bin_dir: Path, language: str) -> None:
    prog = build("jacobi", language, bin_dir)
    res = mpiexec(1, prog, "--steps", "x")
    assert res.returncode == 2 and "--steps needs a" in res.stderr, res.stderr


def test_the_fortran_module_compiles_with_a_program_as_the_docs_show(bin_dir: Path) -> None:
    words = subprocess.run(
        ["dmr-config", "--fsource", "--fflags", "--flibs"], capture_output=True, text=True, check=True
    ).stdout.split()
    source = bin_dir / "hello.f90"
    source.write_text(
        "program hello\n  use mpi\n  use dmr\n  integer :: ierr, n, h\n  call MPI_Init(ierr)\n"
        "  if (dmr_init() /= 0) stop 3\n"
        "  if (dmr_check_status(1, 4, 2, 0, n, h) /= DMR_NO_ACTION) stop 4\n"
        "  if (dmr_check_status(4, 1, 2, 0, n, h) /= DMR_ERR_ARG) stop 5\n"
        "  print *, 'FORTRAN_OK', dmr_size()\n  ierr = dmr_finalize()\n  call MPI_Finalize(ierr)\n"
        "end program\n"
    )
    out = bin_dir / "hello"
    cmd = ["gfortran", f"-J{bin_dir}", words[0], str(source), "-o", str(out), *words[1:]]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    res = mpiexec(2, out)
    assert res.returncode == 0 and res.stdout.count("FORTRAN_OK") == 2, res.stdout + res.stderr


@pytest.mark.parametrize(("compiler", "source"), [("mpicc", "app.c"), ("mpicxx", "app.cpp")])
def test_the_readme_c_example_compiles_as_shown_and_runs(bin_dir: Path, compiler: str, source: str) -> None:
    """The README's line, and the same program as C++ (dmr.h is extern "C")."""
    readme = (HERE.parents[1] / "README.md").read_text()
    example = readme.split("```c\n", 1)[1].split("```", 1)[0]
    (bin_dir / source).write_text(example)
    cmd = f"{compiler} {source} -o app $(dmr-config --cflags --libs)"
    subprocess.run(cmd, shell=True, check=True, cwd=bin_dir, capture_output=True, text=True)
    res = mpiexec(2, bin_dir / "app")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("layout", ["checkout", "site-packages"])
def test_the_embedded_interpreter_is_found_only_in_an_installed_layout(
    bin_dir: Path, tmp_path: Path, layout: str
) -> None:
    """libdmr in a source checkout six folders below some prefix with a ``bin/pythonX.Y`` (another
    Python: the system's, without the toolkit's dependencies) must keep the interpreter that built it;
    in PREFIX/lib/pythonX.Y/site-packages/dmr/lib it embeds PREFIX/bin/pythonX.Y (a venv's)."""
    pyver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    parts = ["check", "work", "main"] if layout == "checkout" else ["lib", pyver, "site-packages"]
    lib_dir = tmp_path.joinpath(*parts, "dmr", "lib")
    lib_dir.mkdir(parents=True)
    shutil.copy(library(), lib_dir / library().name)
    other = tmp_path / "bin" / pyver  # a stand-in: only its name is used, it is never run
    other.parent.mkdir()
    other.symlink_to(sys.executable)
    py_include = sysconfig.get_paths()["include"]
    py_lib = sysconfig.get_config_var("LIBDIR")
    prog = bin_dir / f"prog_interpreter_{layout}"
    cmd = [compiler(), str(HERE / "prog_interpreter.c"), "-o", str(prog), *flags("cflags"), f"-I{py_include}",
           f"-L{lib_dir}", f"-Wl,-rpath,{lib_dir}", "-ldmr", f"-L{py_lib}", f"-Wl,-rpath,{py_lib}",
           f"-lpython{sysconfig.get_config_var('LDVERSION')}"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    env = {k: v for k, v in os.environ.items() if k != "DMR_PYTHON"}
    res = subprocess.run([str(prog)], capture_output=True, text=True, timeout=60, env=env, cwd=HERE)
    shown = next(ln.split(" ", 1)[1] for ln in res.stdout.splitlines() if ln.startswith("EXECUTABLE "))
    assert (shown == str(other)) == (layout == "site-packages"), (shown, res.stderr)

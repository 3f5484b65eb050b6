"""Container images for the dockerized cluster, built without any image registry.

- base ``elastic-slurm-base:<suite>-<hash>``: ``debootstrap --variant=minbase`` + ``docker import``;
- ``elastic-slurm:<release>-<hash>``: ``docker/Dockerfile`` on that base (Slurm, munge, MariaDB, Python,
  and the toolkit's dependencies as PyPI wheels downloaded here on the host and installed offline).

Each tag is a hash of what goes into the image, so an image that exists is never built again (a second
build is a ``docker image inspect``); the only cache is Docker's image store. ``elastic-slurm:<release>``
is kept pointing at the current hash (the compose file names that tag).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from slurm_ext.config import PROJECT_ROOT
from slurm_ext.containers.releases import ReleaseSpec, spec

DOCKER_DIR = PROJECT_ROOT / "docker"
IMAGE_REPO = "elastic-slurm"
BASE_REPO = "elastic-slurm-base"
# Bump when the base recipe below changes (it is part of the base's hash).
BASE_RECIPE = "minbase+policy-rc.d+no-check-valid-until+v1"
# The toolkit's own dependencies (pyproject.toml) are installed in every image from PyPI wheels: the
# repository is mounted into the login and node containers and runs there (MPI through PyPI's mpich:
# Debian's MPICH cannot join worlds under srun). A package without wheels is built here (pure Python).
NO_WHEEL = ("python-hostlist",)
IMAGE_INPUTS = ("Dockerfile", "entrypoint.sh")
PYTHON_LABEL = "org.elastic-slurm.python"
WHEEL_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "elastic-slurm" / "wheels"

Progress = Callable[[str], None]


class ImageError(RuntimeError):
    """An image could not be built; the message names the failing step and its last output lines."""


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    built: bool  # False: found in the image store
    seconds: float


def _quiet(_: str) -> None:
    pass


def _run(args: list[str], what: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if res.returncode != 0:
        tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-15:])
        raise ImageError(f"{what} failed (exit {res.returncode}):\n{tail}")
    return res


def image_exists(tag: str) -> bool:
    res = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    return res.returncode == 0


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:16]


def base_tag(rel: ReleaseSpec) -> str:
    return f"{BASE_REPO}:{rel.suite}-{_digest(rel.suite, BASE_RECIPE)}"


def build_base(rel: ReleaseSpec, progress: Progress = _quiet) -> BuiltImage:
    """Debian ``rel.suite`` as an imported image (about 30-50 s), unless it exists already."""
    tag = base_tag(rel)
    start = time.monotonic()
    if image_exists(tag):
        return BuiltImage(tag, False, time.monotonic() - start)
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is not installed: apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix=f"elastic-slurm-{rel.suite}-", dir="/var/tmp") as tmp:
        root = Path(tmp) / "root"
        progress(f"debootstrap --variant=minbase {rel.suite}")
        mirror = [os.environ["DEBIAN_MIRROR"]] if os.environ.get("DEBIAN_MIRROR") else []
        _run(["debootstrap", "--variant=minbase", rel.suite, str(root), *mirror], f"debootstrap {rel.suite}")
        # apt must not start daemons in a build; sid's Release file may be expired.
        policy = root / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        (root / "etc/apt/apt.conf.d/99elastic-slurm").write_text('Acquire::Check-Valid-Until "false";\n')
        python = _python_version(root)
        for cache in (root / "var/cache/apt/archives").glob("*.deb"):
            cache.unlink()
        progress(f"docker import {tag} (Python {python})")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        try:
            _run(
                ["docker", "import", "--change", f"LABEL {PYTHON_LABEL}={python}", "-", tag],
                f"docker import {tag}",
                stdin=tar.stdout,
            )
        finally:
            if tar.stdout:
                tar.stdout.close()
            tar.wait()
    return BuiltImage(tag, True, time.monotonic() - start)


def _python_version(root: Path) -> str:
    """'3.13' from the suite's python3 candidate (the wheels must match the image's Python)."""
    res = _run(["chroot", str(root), "apt-cache", "policy", "python3"], "apt-cache policy python3")
    m = re.search(r"Candidate:\s*(\d+\.\d+)", res.stdout)
    if not m:
        raise ImageError(f"no python3 candidate in {root}: {res.stdout.strip()}")
    return m.group(1)


def image_python(tag: str) -> str:
    res = _run(
        ["docker", "image", "inspect", "--format", f'{{{{index .Config.Labels "{PYTHON_LABEL}"}}}}', tag],
        f"docker image inspect {tag}",
    )
    return res.stdout.strip()


def requirements() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(wheels, pure-Python sdists): ``[project].dependencies`` of pyproject.toml, as written there."""
    deps = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    sdists = tuple(d for d in deps if re.split(r"[<>=!~; \[]", d, maxsplit=1)[0].lower() in NO_WHEEL)
    return tuple(d for d in deps if d not in sdists), sdists


def download_wheels(python: str, progress: Progress = _quiet) -> Path:
    """PyPI wheels for ``python`` (pip inside a build cannot verify HTTPS here), cached on the host."""
    wheels, sdists = requirements()
    dest = WHEEL_CACHE / f"py{python}-{_digest(*wheels, *sdists)}"
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    # Two releases of one Python version, built at once, share the download (and wait for it).
    with (WHEEL_CACHE / f"{dest.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _download_wheels(dest, wheels, sdists, python, progress)


def _download_wheels(
    dest: Path, wheels: tuple[str, ...], sdists: tuple[str, ...], python: str, progress: Progress
) -> Path:
    done = dest / ".complete"
    if done.is_file():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    progress(f"pip download {' '.join(wheels + sdists)} for Python {python}")
    quiet = ["-q", "--disable-pip-version-check"]
    binary = ["--only-binary=:all:", "--python-version", python]
    _run(
        [*_pip(), "download", *quiet, *binary, "-d", str(dest), *wheels], f"pip download for Python {python}"
    )
    if sdists:
        _run([*_pip(), "wheel", *quiet, "--no-deps", "-w", str(dest), *sdists], "pip wheel")
    done.touch()
    return dest


def _pip() -> list[str]:
    import sys

    return [sys.executable, "-m", "pip"]


def image_tag(rel: ReleaseSpec, base: str, python: str) -> str:
    inputs = [(DOCKER_DIR / name).read_bytes() for name in IMAGE_INPUTS]
    wheels, sdists = requirements()
    return f"{IMAGE_REPO}:{rel.release}-{_digest(base, python, *wheels, *sdists, *inputs)}"


def alias(rel: ReleaseSpec) -> str:
    return f"{IMAGE_REPO}:{rel.release}"


def _prune(rel: ReleaseSpec, keep: str) -> None:
    """Remove this release's images of older inputs (best effort: one in use by a container stays)."""
    res = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", IMAGE_REPO],
        capture_output=True,
        text=True,
        check=False,
    )
    stale = [t for t in res.stdout.split() if t.startswith(f"{IMAGE_REPO}:{rel.release}-") and t != keep]
    if stale:
        subprocess.run(["docker", "rmi", *stale], capture_output=True, check=False)


def build(release: str, progress: Progress = _quiet) -> BuiltImage:
    """The cluster image of ``release`` (base included), built only if no image has its hash."""
    rel = spec(release)
    start = time.monotonic()
    base = build_base(rel, progress)
    python = image_python(base.tag)
    tag = image_tag(rel, base.tag, python)
    built = False
    if not image_exists(tag):
        wheels = download_wheels(python, progress)
        with tempfile.TemporaryDirectory(prefix="elastic-slurm-ctx-", dir="/var/tmp") as tmp:
            ctx = Path(tmp)
            for name in IMAGE_INPUTS:
                shutil.copy2(DOCKER_DIR / name, ctx / name)
            shutil.copytree(wheels, ctx / "wheels", ignore=shutil.ignore_patterns(".complete"))
            progress(f"docker build {tag}")
            _run(
                ["docker", "build", "-q", "--build-arg", f"BASE={base.tag}", "-t", tag, str(ctx)],
                f"docker build {tag}",
            )
        built = True
        _prune(rel, keep=tag)
    _run(["docker", "tag", tag, alias(rel)], f"docker tag {alias(rel)}")
    return BuiltImage(tag, built or base.built, time.monotonic() - start)

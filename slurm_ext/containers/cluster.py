"""`slurm-ext cluster up|down|status --docker`: the compose cluster's life cycle, through docker-compose."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from slurm_ext.config import SELECTS
from slurm_ext.containers import compose, images, site
from slurm_ext.containers.releases import spec

Progress = Callable[[str], None]
LABEL = "com.docker.compose.project"


class DockerClusterError(RuntimeError):
    """The dockerized cluster cannot be started or is in a state that needs the user's attention."""


@dataclass(frozen=True)
class UpReport:
    release: str
    nodes: int
    image: images.BuiltImage | None  # None: the cluster was already up
    seconds: float  # from `docker-compose up` to all nodes idle


def _silent(_: str) -> None:
    pass


class DockerCluster:
    def __init__(self, project: str = compose.PROJECT) -> None:
        self.project = project

    # ----- helpers -----------------------------------------------------------------------------
    @staticmethod
    def check_tools() -> None:
        for tool in ("docker", "docker-compose"):
            if shutil.which(tool) is None:
                raise DockerClusterError(
                    f"{tool} is not installed (the dockerized cluster needs Docker and Compose v1)"
                )
        res = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True
        )
        if res.returncode != 0:
            raise DockerClusterError(f"the Docker engine does not answer: {res.stderr.strip()[:300]}")

    def container(self, service: str) -> str:
        """Compose v1's name of a service's container."""
        return f"{self.project}_{service}_1"

    def exec_prefix(self, service: str = "login") -> list[str]:
        """Prefix that runs a command in a container (the Slurm adapter's ``command_prefix``)."""
        return ["docker", "exec", "-i", self.container(service)]

    def _compose(
        self,
        file: os.PathLike[str] | str,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker-compose", "-p", self.project, "-f", str(file), *args],
            capture_output=True,
            text=True,
            check=False,
            env=os.environ | (env or {}),
            timeout=timeout,
        )

    def gateway(self) -> str:
        """This host's address on the cluster's network: where the containers reach a server that
        runs on this host (a control service in a test process, say)."""
        res = subprocess.run(
            ["docker", "network", "inspect", "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}",
             f"{self.project}_cluster"],
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
        found = res.stdout.split()
        if res.returncode != 0 or not found:
            raise DockerClusterError(f"no gateway on the cluster's network: {res.stderr.strip()[:300]}")
        return found[0]

    def run(
        self, *args: str, service: str = "login", timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.exec_prefix(service), *args], capture_output=True, text=True, check=False, timeout=timeout
        )

    def containers(self) -> list[tuple[str, str]]:
        """(name, status) of every container of the project, running or not."""
        res = subprocess.run(
            [
                "docker",
                "ps",
                "-a",
                "--filter",
                f"label={LABEL}={self.project}",
                "--format",
                "{{.Names}}\t{{.Status}}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        return [tuple(line.split("\t", 1)) for line in res.stdout.splitlines() if "\t" in line]  # type: ignore[misc]

    def running_release(self) -> str | None:
        """The release the running cluster was started with (from its login container's image), or None."""
        res = subprocess.run(
            [
                "docker",
                "inspect",
                "--format",
                "{{.State.Running}} {{.Config.Image}}",
                self.container("login"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        running, _, image = res.stdout.strip().partition(" ")
        if res.returncode != 0 or running != "true":
            return None
        return image.rpartition(":")[2].partition("-")[0] or None

    def node_states(self) -> list[str]:
        res = self.run("sinfo", "-h", "-N", "-o", "%N %T")
        if res.returncode != 0:
            return []
        return [line.split()[-1].rstrip("*~#!%$@^-") for line in res.stdout.splitlines() if line.strip()]

    # ----- up / down / status ------------------------------------------------------------------
    def up(
        self,
        release: str,
        nodes: int = compose.DEFAULT_NODES,
        expansion: bool = True,
        progress: Progress = _silent,
        timeout: float = 120,
        select: str = "linear",
        cpus_per_node: int = 2,
        start_units: bool = False,
    ) -> UpReport:
        """Build (or find) the image, start the containers and wait until every node is idle.
        ``select``: linear or cons_tres, the site profile (nodes shared by small jobs, allocated by
        core; two partitions sharing a node; accounting enforced, its users added here: see
        :mod:`slurm_ext.containers.site`); with ``start_units`` there, the service and the EJB
        manager started as its service user by their units' commands."""
        spec(release)
        if nodes < 1:
            raise DockerClusterError(f"--nodes must be at least 1, got {nodes}")
        if cpus_per_node < 1:
            raise DockerClusterError(f"--cpus-per-node must be at least 1, got {cpus_per_node}")
        if select not in SELECTS:
            raise DockerClusterError(f"--select must be one of {', '.join(SELECTS)}, got {select!r}")
        self.check_tools()
        current = self.running_release()
        if current is not None:
            count = sum(name.startswith(f"{self.project}_n") for name, _ in self.containers())
            if (current, count) != (release, nodes):
                raise DockerClusterError(
                    f"a dockerized cluster is already up (Slurm {current}, {count} nodes); "
                    "run `slurm-ext cluster down --docker` first"
                )
            return UpReport(release, nodes, None, 0.0)
        if self.containers():
            progress("removing the remains of an earlier cluster")
            self.down()
        image = images.build(release, progress)
        progress(f"image {image.tag} ({'built' if image.built else 'cached'}, {image.seconds:.1f} s)")
        file = compose.write(nodes)
        env = {"SLURM_RELEASE": release, "SLURM_EXPANSION": "1" if expansion else "0", "SLURM_SELECT": select,
               "SLURM_CPUS_PER_NODE": str(cpus_per_node)}  # fmt: skip
        start = time.monotonic()
        progress(
            f"docker-compose up: {nodes} nodes of {cpus_per_node} CPUs, Slurm {release}, select/{select}"
        )
        res = self._compose(file, "up", "-d", "--no-build", env=env)
        try:
            if res.returncode != 0:
                raise DockerClusterError(f"docker-compose up failed: {res.stderr.strip()[-800:]}")
            self._wait_idle(nodes, timeout)
            if select == "cons_tres":
                site.setup(self, nodes, progress)
                if start_units:
                    site.start_daemons(self, progress)
        except BaseException:
            progress("start-up failed: taking the cluster down again")
            logs = self._compose(file, "logs", "--no-color", "--tail", "5").stdout.strip()[-1500:]
            self.down()
            if logs:
                progress(f"last log lines:\n{logs}")
            raise
        return UpReport(release, nodes, image, time.monotonic() - start)

    def _wait_idle(self, nodes: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        states: list[str] = []
        while time.monotonic() < deadline:
            states = self.node_states()
            if states.count("idle") >= nodes:
                return
            time.sleep(0.3)
        seen = " ".join(states) or "no answer from sinfo"
        raise DockerClusterError(f"{nodes} nodes not idle within {timeout:.0f} s (states: {seen})")

    def down(self, progress: Progress = _silent) -> int:
        """Remove every container, the network and every volume of the project; returns containers removed."""
        self.check_tools()
        count = len(self.containers())
        file = compose.GENERATED if compose.GENERATED.exists() else compose.CHECKED_IN
        res = self._compose(file, "down", "-v", "--remove-orphans", "-t", "5")
        if res.returncode != 0:
            raise DockerClusterError(f"docker-compose down failed: {res.stderr.strip()[-800:]}")
        left = self.leftovers()
        if left:
            raise DockerClusterError(f"left behind after down: {', '.join(left)}")
        compose.GENERATED.unlink(missing_ok=True)
        progress(f"removed {count} containers, the network and the volumes")
        return count

    def leftovers(self) -> list[str]:
        """Containers, networks and volumes of the project that still exist."""
        out = []
        for kind in ("container", "network", "volume"):
            args = [
                "docker",
                kind,
                "ls",
                "--filter",
                f"label={LABEL}={self.project}",
                "--format",
                "{{.Name}}",
            ]
            if kind == "container":
                args = [
                    "docker",
                    "ps",
                    "-a",
                    "--filter",
                    f"label={LABEL}={self.project}",
                    "--format",
                    "{{.Names}}",
                ]
            res = subprocess.run(args, capture_output=True, text=True, check=False)
            out += [f"{kind} {name}" for name in res.stdout.split()]
        return out

    def status_text(self) -> str:
        self.check_tools()
        containers = self.containers()
        if not containers:
            return "docker cluster: down"
        release = self.running_release()
        lines = [f"docker cluster: {'up, Slurm ' + release if release else 'NOT RUNNING (login down)'}"]
        lines += [f"  {name:<28} {status}" for name, status in containers]
        if release:
            for args in (
                ("sinfo", "-N", "-o", "%N %T %c"),
                ("squeue", "-o", "%.8i %.10j %.8u %.9T %.5D %N %r"),
            ):
                res = self.run(*args)
                lines.append(
                    res.stdout.rstrip() if res.returncode == 0 else f"{args[0]}: {res.stderr.strip()}"
                )
        return "\n".join(lines)

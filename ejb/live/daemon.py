"""``ejb manager``: the EJB manager as a daemon next to ``slurm-ext serve``.

Two ports: the manager's own (``--port``, default 7118: ``ejb-submit``, ``ejb status``/``cancel``
and the subjobs' pilots) and the DMR protocol port (``--service-port``, default 7119) the bundled
applications' checks go to. Both default to 127.0.0.1, like the DMR service: give ``--host`` an
address the compute nodes reach on a real cluster.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from dmr.agent import advertised_host
from ejb.live.control import ControlServer
from ejb.live.manager import Manager
from ejb.params import EJBParams
from slurm_ext.service import Server
from slurm_ext.slurm.adapter import SlurmCluster
from slurm_ext.stop_signal import on_stop_signal, wait_for


class Daemon:
    """The manager and its two servers (also used in-process by the tests and the demo)."""

    def __init__(
        self,
        state_dir: Path,
        params: EJBParams,
        host: str = "127.0.0.1",
        port: int = 7118,
        service_port: int = 7119,
        interval: float = 1.0,
        slurm_conf: Path | None = None,
        spares: int | None = None,
    ) -> None:
        seen_as = advertised_host() if host in ("0.0.0.0", "") else host
        backend = SlurmCluster(slurm_conf=slurm_conf)
        self.manager = Manager(backend, state_dir, params, "", "", interval, spares)
        self.control = ControlServer(self.manager, host, port)
        self.service = Server(self.manager, host, service_port)
        self.manager.pilot_address = f"{seen_as}:{self.control.server_address[1]}"
        self.manager.service_address = f"{seen_as}:{self.service.address[1]}"
        self.interval = interval

    @property
    def address(self) -> str:
        return self.manager.pilot_address

    def start(self) -> None:
        self.control.start()
        self.service.start(housekeeping_interval=self.interval)

    def stop(self) -> None:
        self.service.stop()
        self.control.shutdown()
        self.control.server_close()
        self.manager.close()


def run(daemon: Daemon) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr, force=True)
    stop = on_stop_signal()
    daemon.start()
    print(f"ejb manager: listening on {daemon.address} (applications' checks on "
          f"{daemon.manager.service_address})", flush=True)  # fmt: skip
    wait_for(stop)
    daemon.stop()

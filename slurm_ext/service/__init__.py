"""The control service (`slurm-ext serve`): answers DMR runtimes and resizes their jobs on Slurm.

- :mod:`.watcher`   one cached cluster snapshot for everybody, refreshed in the background
- :mod:`.inflight`  the reconfigurations in progress (one per job), with their acks
- :mod:`.controller` decisions (policy), expand/shrink through the backend, time limits
- :mod:`.server`    the TCP server speaking :mod:`slurm_ext.protocol`
"""

from slurm_ext.service.controller import Controller, ServiceOptions
from slurm_ext.service.server import Server

__all__ = ["Controller", "Server", "ServiceOptions"]

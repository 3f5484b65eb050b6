"""Under ``dmr-run --nodes a,b``: the application's first group fails before it opens the port
(a rank crashing at start-up), so nobody will ever expect the second group."""

from __future__ import annotations

import os
import sys

if os.environ.get("DMR_LAUNCH_GROUPS"):  # the first group: it would open the port and expect the others
    sys.exit(3)

from dmr.runtime import Runtime  # noqa: E402 -- the first group exits before MPI starts

Runtime()
print("JOINED", flush=True)

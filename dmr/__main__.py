"""``python -m dmr [run] -- CMD`` (= ``dmr-run``), ``python -m dmr join ...`` (expander jobs),
``python -m dmr serve`` (a private agent): the job agent's commands, see :mod:`dmr.agent`."""

import sys

from dmr.agent import main

sys.exit(main())

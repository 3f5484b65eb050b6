"""Which Slurm release the commands talk to (22.05, 24.11, 26.05 are tested), detected once."""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurm_ext.errors import SlurmError
from slurm_ext.slurm.commands import SlurmCommands

# 'slurm 24.11.5', Debian's 'slurm-wlm 22.05.8' (--version); 'SLURM_VERSION = 26.05.5' (show config)
_VERSION = re.compile(r"^\s*slurm(?:-wlm|_version\s*=)?\s+(\d+)\.(\d+)\.(\d+)", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, order=True)
class SlurmRelease:
    major: int
    minor: int
    patch: int

    @property
    def name(self) -> str:
        """'24.11', as sites name a release."""
        return f"{self.major}.{self.minor:02d}"

    def __str__(self) -> str:
        return f"{self.major}.{self.minor:02d}.{self.patch}"


def parse_version(text: str) -> SlurmRelease:
    """'slurm 24.11.5' (``--version``) or 'SLURM_VERSION = 26.05.5' (``scontrol show config``)."""
    if m := _VERSION.search(text):
        return SlurmRelease(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    raise ValueError(f"no Slurm version in {text.strip()[:200]!r}")


def detect_release(cmd: SlurmCommands) -> SlurmRelease:
    """``sinfo --version`` (no controller needed), else ``scontrol show config``."""
    res = cmd.run(["sinfo", "--version"], check=False)
    try:
        return parse_version(res.stdout)
    except ValueError:
        pass
    out = cmd.run(["scontrol", "show", "config"]).stdout
    try:
        return parse_version(out)
    except ValueError as exc:
        raise SlurmError(f"cannot tell the Slurm release: {exc}") from None

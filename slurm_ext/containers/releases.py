"""The Slurm releases the dockerized cluster offers, and the Debian suite each comes from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReleaseSpec:
    release: str  # Slurm's major.minor, as users name it
    suite: str  # the Debian suite whose archive ships it


RELEASES: dict[str, ReleaseSpec] = {
    r.release: r
    for r in (ReleaseSpec("22.05", "bookworm"), ReleaseSpec("24.11", "trixie"), ReleaseSpec("26.05", "sid"))
}
DEFAULT_RELEASE = "22.05"


class UnknownRelease(ValueError):
    pass


def spec(release: str) -> ReleaseSpec:
    try:
        return RELEASES[release]
    except KeyError:
        raise UnknownRelease(
            f"unknown Slurm release {release!r}; choose one of {', '.join(RELEASES)}"
        ) from None

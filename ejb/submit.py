"""``ejb-submit``: sbatch's command line, with Elastic Job Bundling where it helps.

The job is read the way sbatch reads it (options, then ``#SBATCH`` lines of the script; the command
line wins) plus EJB's own knobs (``--ejb-min-procs``, ``--ejb-o-max``, ``--ejb-migration``, or an
``#EJB`` line in the script). Before anything is submitted, ``sbatch --test-only`` checks the job:
what Slurm rejects gets sbatch's own error and nothing is submitted. A job EJB cannot help (too
small, starts now anyway, not written against ``dmr``) or any job while the EJB manager is not
running goes to plain sbatch, exactly as typed, with one line saying why: never a lost job. With
``--ejb-require`` such a job is not submitted at all (exit 1, one line saying why), for scripts that
want EJB or nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ejb.live import jobs
from ejb.live.client import manager_address, request
from slurm_ext.slurm.parse import parse_test_only

USAGE = """\
usage: ejb-submit [sbatch options] [--ejb-min-procs N] [--ejb-o-max N] [--ejb-migration S] [--ejb-require]
                  script [args...]
       ejb-submit [sbatch options] --wrap "command"

Submit a job as sbatch would; if it would wait in the queue and is written against dmr (DMR's
runtime, `dmr-run`), the EJB manager starts it now in subjobs shaped to the free slots and bundles
them back into one application. Otherwise (or with the manager down) the job goes to sbatch as typed.

EJB options (also as an `#EJB --min-procs 8 --o-max 4` line in the script):
  --ejb-min-procs N     smallest job (processors) worth bundling [default 8, the paper's]
  --ejb-o-max N         most ranks per CPU in a subjob [default: the manager's, 4]
  --ejb-migration S     seconds a migration costs the job, for EJB's choices [default: the manager's, 10]
  --ejb-manager H:P     the EJB manager [default $EJB_MANAGER or 127.0.0.1:7118]
  --ejb-require         bundle the job or submit nothing: where EJB would leave the job to sbatch,
                        exit 1 with the reason instead (nothing is left in the queue)
Every other option is sbatch's (see `man sbatch`), e.g. -N, -n, --ntasks-per-node, -c, -t, -p, -J,
-o, -e, -A, -q, -D, --export, --wrap, -d, --parsable.
"""

# sbatch options that take no value; every other option written without "=" takes the next word
FLAGS = {
    "--parsable", "--exclusive", "-H", "--hold", "--test-only", "-Q", "--quiet", "-v", "--verbose",
    "-W", "--wait", "--requeue", "--no-requeue", "-O", "--overcommit", "-s", "--oversubscribe",
    "--contiguous", "--spread-job", "--use-min-nodes", "--ignore-pbs", "--no-kill", "-k", "-h", "--help",
    "-V", "--version", "--usage",
}  # fmt: skip
EJB_OPTIONS = {"--ejb-min-procs": "min_procs", "--ejb-o-max": "o_max", "--ejb-migration": "migration",
               "--ejb-manager": "manager", "--ejb-require": "require"}  # fmt: skip
EJB_FLAGS = {"--ejb-require"}  # EJB options that take no value
DMR_MARKERS = re.compile(r"\bdmr-run\b|-m\s+dmr\b|\bimport\s+dmr\b|\bfrom\s+dmr\b")


class SubmitError(Exception):
    """A user mistake: one line, exit code 2."""


class NotBundled(Exception):
    """``--ejb-require`` and EJB leaves the job to sbatch: nothing submitted, exit 1."""


class Unreadable(SubmitError):
    """The command line did not read as sbatch's: sbatch itself may say what is wrong."""


@dataclass
class Request:
    """What ``ejb-submit`` was asked: sbatch's words (EJB's removed) and what EJB needs of them."""

    sbatch_args: list[str]  # options for sbatch, as typed (EJB options removed)
    script: Path | None  # the batch script (None with --wrap)
    script_args: list[str]
    options: dict[str, str] = field(default_factory=dict)  # effective sbatch options (long names)
    ejb: dict[str, str] = field(default_factory=dict)
    wrap: str | None = None

    @property
    def parsable(self) -> bool:
        return "parsable" in self.options

    @property
    def required(self) -> bool:
        """``--ejb-require``: EJB or nothing."""
        return "require" in self.ejb


def _split(words: list[str], stop_at_script: bool) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Options as (name, value) pairs, and what follows them (script and its arguments)."""
    opts: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        w = words[i]
        if not w.startswith("-") or w == "-":
            if stop_at_script:
                break
            i += 1
            continue
        if w.startswith("--") and "=" in w:
            name, value = w.split("=", 1)
            opts.append((name, value))
        elif w in FLAGS or w in EJB_FLAGS:
            opts.append((w, None))
        elif not w.startswith("--") and len(w) > 2:  # -N4
            opts.append((w[:2], w[2:]))
        else:
            if i + 1 >= len(words):
                raise Unreadable(f"option {w} needs a value")
            opts.append((w, words[i + 1]))
            i += 1
        i += 1
    return opts, words[i:]


def _directives(script: Path) -> tuple[list[str], list[str]]:
    """``#SBATCH`` and ``#EJB`` words of a script, read as sbatch does: up to the first command."""
    sbatch: list[str] = []
    ejb: list[str] = []
    for n, line in enumerate(script.read_text(errors="replace").splitlines()):
        stripped = line.strip()
        if n == 0 and stripped.startswith("#!"):
            continue
        if stripped and not stripped.startswith("#"):
            break
        for tag, into in (("#SBATCH", sbatch), ("#EJB", ejb)):
            if stripped.startswith(tag + " ") or stripped == tag:
                into += shlex.split(stripped[len(tag) :], comments=True)
    return sbatch, ejb


def _ejb_value(name: str, value: str | None) -> str:
    return "yes" if name in EJB_FLAGS else str(value)


def parse(argv: list[str]) -> Request:
    opts, rest = _split(argv, stop_at_script=True)
    sbatch_args = argv[: len(argv) - len(rest)]
    ejb: dict[str, str] = {}
    options: dict[str, str] = {}
    wrap = None
    for name, value in opts:
        if name in EJB_OPTIONS:
            ejb[EJB_OPTIONS[name]] = _ejb_value(name, value)
    kept = _without_ejb_options(sbatch_args)  # sbatch gets exactly what was typed, without EJB's words
    script = None
    script_args: list[str] = []
    directive_opts: list[tuple[str, str | None]] = []
    if any(n == "--wrap" for n, _ in opts):
        wrap = next(v for n, v in opts if n == "--wrap")
        if rest:
            raise SubmitError("give either a script or --wrap, not both")
    else:
        if not rest:
            raise SubmitError("no batch script given (and no --wrap); see ejb-submit --help")
        script, script_args = Path(rest[0]), rest[1:]
        if not script.is_file():
            raise Unreadable(f"unable to open file {script}")
        words, ejb_words = _directives(script)
        directive_opts, _ = _split(words, stop_at_script=False)
        # "#EJB --o-max 4" is "--ejb-o-max 4": read in the long form, which knows the flags
        long_words = ["--ejb-" + w[2:] if w.startswith("--") else w for w in ejb_words]
        for name, value in _split(long_words, stop_at_script=False)[0]:
            key = EJB_OPTIONS.get(name)
            if key is None:
                raise SubmitError(f"unknown #EJB option {name.replace('--ejb-', '--', 1)} in {script}")
            ejb.setdefault(key, _ejb_value(name, value))
    for name, value in [*directive_opts, *opts]:  # the command line wins
        long = jobs.long_name(name)
        options[long] = "" if value is None else value
    return Request(kept, script, script_args, options, ejb, wrap)


# -- what Slurm and the manager say --------------------------------------------------------------
def _sbatch(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sbatch", *args], capture_output=True, text=True, check=False)


def _script_words(req: Request) -> list[str]:
    return ["--wrap", req.wrap] if req.wrap is not None else [str(req.script), *req.script_args]


def _procs(req: Request) -> int:
    o = req.options
    try:
        if "ntasks" in o:
            tasks = int(o["ntasks"])
        else:
            nodes = int(o.get("nodes", "1").split("-")[0])
            tasks = nodes * int(o.get("ntasks-per-node", "1"))
        return tasks * int(o.get("cpus-per-task", "1"))
    except ValueError:
        return 0


PING_TIMEOUT = 5.0


def _manager(address: str) -> str | None:
    """The address the manager's pilots reach it at (None: it does not answer)."""
    try:
        # A few seconds: a manager that just started, on a busy login node, still answers.
        reply = request(address, {"op": "ping"}, timeout=PING_TIMEOUT)
    except (OSError, ValueError):
        return None
    return str(reply.get("pilot") or address) if reply.get("ok") else None


def _uses_dmr(req: Request) -> bool:
    text = req.wrap if req.wrap is not None else req.script.read_text(errors="replace")  # type: ignore[union-attr]
    return bool(DMR_MARKERS.search(text or ""))


def not_bundled_because(req: Request, starts_in: float | None) -> str | None:
    """Why EJB leaves this job to sbatch (None: EJB bundles it; the manager answers)."""
    min_procs = int(req.ejb.get("min_procs", 8))
    if (procs := _procs(req)) < min_procs:
        return f"{procs} processor(s), fewer than --ejb-min-procs {min_procs}"
    if starts_in is not None and starts_in <= 5:
        return "it starts now anyway (sbatch --test-only)"
    if not _uses_dmr(req):
        return "the script does not run its application with dmr (no dmr-run / import dmr)"
    manager = manager_address(req.ejb.get("manager"))
    if _manager(manager) is None:
        return f"warning: the EJB manager at {manager} is not running"
    return None


def _ppn(req: Request) -> int:
    o = req.options
    try:
        if "ntasks-per-node" in o:
            return max(1, int(o["ntasks-per-node"]))
        if "ntasks" in o:
            return max(1, -(-int(o["ntasks"]) // int(o.get("nodes", "1").split("-")[0])))
    except ValueError:
        pass
    return 1


def bundle(req: Request) -> int:
    """Submit the placeholder J0 (the user's job, its dmr-run a pilot) and hand it to the manager.

    Whatever goes wrong after J0 is in the queue, J0 runs the job by itself: never a lost job.
    """
    manager = manager_address(req.ejb.get("manager"))
    pilot_at = _manager(manager) or manager
    secret = secrets.token_hex(12)
    options, _ = _split(req.sbatch_args, stop_at_script=True)
    argv = jobs.j0_argv(options, _script_words(req), f"{pilot_at}:{secret}:j0")
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    sys.stderr.write(res.stderr)
    if res.returncode != 0:
        return res.returncode
    j0 = int(res.stdout.strip().split(";")[0])
    try:
        reply = request(manager, {
            "op": "register", "j0": j0, "secret": secret, "options": [[n, v] for n, v in options],
            "script": _script_words(req), "cwd": os.getcwd(), "env": dict(os.environ), "ppn": _ppn(req),
            "o_max": int(req.ejb["o_max"]) if "o_max" in req.ejb else None,
            "migration": float(req.ejb["migration"]) if "migration" in req.ejb else None,
        })  # fmt: skip
        why = None if reply.get("ok") else str(reply.get("error"))
    except (OSError, ValueError) as exc:
        why = str(exc)
    if why is not None and req.required:  # J0 must not run by itself: take it back
        # a registration that timed out here may have been taken there: undo it there too
        with contextlib.suppress(OSError, ValueError):
            request(manager, {"op": "cancel", "eid": j0})
        subprocess.run(["scancel", str(j0)], capture_output=True, check=False)
        raise NotBundled(f"the EJB manager did not take the job ({why})")
    print(res.stdout.strip() if req.parsable else f"Submitted batch job {j0}", flush=True)
    if why is not None:
        print(f"ejb-submit: warning: the EJB manager did not take job {j0} ({why}); it runs as a plain job",
              file=sys.stderr)  # fmt: skip
    else:
        print(f"ejb-submit: job {j0} bundled: it starts in subjobs now (ejb status {j0})", file=sys.stderr)
    return 0


def _without_ejb_options(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for w in argv:
        if skip:
            skip = False
        elif w.split("=", 1)[0] in EJB_OPTIONS:
            skip = "=" not in w and w not in EJB_FLAGS
        else:
            out.append(w)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "--usage"):
        print(USAGE, end="")
        return 0 if argv else 2
    try:
        req = parse(argv)
        for key in ("min_procs", "o_max"):
            if key in req.ejb and not (req.ejb[key].isdigit() and int(req.ejb[key]) > 0):
                flag = "--ejb-" + key.replace("_", "-")
                raise SubmitError(f"{flag} must be a positive integer, got {req.ejb[key]!r}")
        if "migration" in req.ejb:
            try:
                ok = float(req.ejb["migration"]) >= 0
            except ValueError:
                ok = False
            if not ok:
                raise SubmitError(f"--ejb-migration must be seconds >= 0, got {req.ejb['migration']!r}")
    except SubmitError as exc:
        if isinstance(exc, Unreadable):  # an option ejb-submit does not know: sbatch's verdict first
            test = _sbatch(["--test-only", *_without_ejb_options(argv)])
            if test.returncode != 0 and test.stderr.strip():
                sys.stderr.write(test.stderr)
                return test.returncode
        print(f"ejb-submit: error: {exc}", file=sys.stderr)
        return 2
    words = _script_words(req)
    test = _sbatch(["--test-only", *[a for a in req.sbatch_args if a != "--parsable"], *words])
    if test.returncode != 0:  # Slurm's own verdict, word for word; nothing submitted
        sys.stderr.write(test.stderr)
        return test.returncode
    try:
        starts_in: float | None = parse_test_only(test.stderr + test.stdout)[0].timestamp() - time.time()
    except ValueError:
        starts_in = None  # an sbatch whose --test-only line we cannot read: decide without it
    why = not_bundled_because(req, starts_in)
    try:
        if why is None:
            return bundle(req)
        if req.required:
            raise NotBundled(why.removeprefix("warning: "))
    except NotBundled as exc:
        print(f"ejb-submit: error: not submitted (--ejb-require): {exc}", file=sys.stderr)
        return 1
    res = _sbatch([*req.sbatch_args, *words])
    sys.stdout.write(res.stdout)
    sys.stderr.write(res.stderr)
    if res.returncode == 0 and why is not None:
        print(f"ejb-submit: submitted with plain sbatch: {why}", file=sys.stderr)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())

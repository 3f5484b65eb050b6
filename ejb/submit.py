"""``ejb-submit``: sbatch's command line, with Elastic Job Bundling where it helps.

The job is read the way the installed sbatch reads it (:mod:`ejb.sbatch_cli`: its own option
table, ``#SBATCH`` lines up to the first command, ``hetjob`` separators; the command line wins)
plus EJB's own knobs (``--ejb-min-procs``, ``--ejb-o-max``, ``--ejb-migration``, or an ``#EJB``
line in the script). A job EJB does not bundle goes to sbatch with exactly the words and the
environment it was given (EJB's own words removed), with one line saying why: arrays,
heterogeneous jobs, ``--wait``, ``--test-only``, ``--hold``, dependencies, ``--begin``, jobs too
small, jobs that start now anyway, jobs whose script does not run a ``dmr`` application, command
lines ejb-submit cannot read, and any job while the EJB manager is down. sbatch alone decides
whether such a job is accepted, and what it rejects gets its own message: ejb-submit never refuses
a job sbatch accepts. With ``--ejb-require`` a job EJB would not bundle is not submitted at all
(exit 1, one line saying why), for scripts that want EJB or nothing.
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

from ejb import sbatch_cli
from ejb.live import jobs
from ejb.live.client import manager_address, request
from ejb.sbatch_cli import CommandLineError, Component, Grammar
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

EJB_OPTIONS = {"--ejb-min-procs": "min_procs", "--ejb-o-max": "o_max", "--ejb-migration": "migration",
               "--ejb-manager": "manager", "--ejb-require": "require"}  # fmt: skip
EJB_FLAGS = {"--ejb-require"}  # EJB options that take no value
DMR_MARKERS = re.compile(r"\bdmr-run\b|-m\s+dmr\b|\bimport\s+dmr\b|\bfrom\s+dmr\b")


class SubmitError(Exception):
    """A user mistake: one line, exit code 2."""


class NotBundled(Exception):
    """``--ejb-require`` and EJB leaves the job to sbatch: nothing submitted, exit 1."""


@dataclass
class Request:
    """What ``ejb-submit`` was asked: sbatch's words (EJB's removed) and what EJB needs of them."""

    sbatch_args: list[str]  # the words for sbatch, as typed (EJB options removed), script included
    script: Path | None  # the batch script (None with --wrap)
    script_args: list[str]
    components: list[Component]  # each component's options: #SBATCH lines, then the command line
    given: Component  # the first component's options on the command line only
    ejb: dict[str, str] = field(default_factory=dict)
    wrap: str | None = None

    @property
    def options(self) -> dict[str, str]:
        """The first component's effective options (long names; "" for one given without a value)."""
        out: dict[str, str] = {}
        for g in self.components[0].given:
            out[g.option.long] = "" if g.value is None else g.value
        return out

    @property
    def parsable(self) -> bool:
        return self.given.has("parsable")

    @property
    def required(self) -> bool:
        """``--ejb-require``: EJB or nothing."""
        return "require" in self.ejb


def split_ejb(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """EJB's own options (``--ejb-x V``, ``--ejb-x=V``, ``--ejb-require``) among ``words``, and the
    words without them: exactly what sbatch gets."""
    ejb: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(words):
        name, eq, value = words[i].partition("=")
        if name not in EJB_OPTIONS:
            rest.append(words[i])
        elif name in EJB_FLAGS:
            ejb[EJB_OPTIONS[name]] = "yes"
        elif eq:
            ejb[EJB_OPTIONS[name]] = value
        elif i + 1 < len(words):
            ejb[EJB_OPTIONS[name]] = words[i + 1]
            i += 1
        else:
            raise SubmitError(f"{name} needs a value")
        i += 1
    return ejb, rest


def _ejb_directives(text: str, script: Path) -> dict[str, str]:
    """``#EJB --o-max 4`` lines (read as ``--ejb-o-max 4``), in the same header as ``#SBATCH``'s."""
    words: list[str] = []
    for n, line in enumerate(text.split("\n")):
        stripped = line.strip()
        if n and stripped and not stripped.startswith("#"):
            break
        if stripped.startswith("#EJB ") or stripped == "#EJB":
            words += shlex.split(stripped[4:], comments=True)
    long = ["--ejb-" + w[2:] if w.startswith("--") else w for w in words]
    for w in long:
        name = w.split("=", 1)[0]
        if name.startswith("--ejb-") and name not in EJB_OPTIONS:
            raise SubmitError(f"unknown #EJB option {name.replace('--ejb-', '--', 1)} in {script}")
    return split_ejb(long)[0]


def parse(argv: list[str], grammar: Grammar | None = None) -> Request:
    """Read ``argv`` as sbatch would. Raises :class:`SubmitError` for a mistake in EJB's own words,
    :class:`CommandLineError` for anything sbatch must judge itself (the job then goes to it)."""
    ejb, words = split_ejb(argv)
    grammar = grammar or sbatch_cli.installed()
    command_line, rest = grammar.read(words)
    wrap = command_line[-1].value("wrap") if command_line[-1].has("wrap") else None
    script: Path | None = None
    script_args: list[str] = []
    components = command_line
    if wrap is None:
        if not rest:
            raise CommandLineError("no batch script (sbatch reads it from its standard input)")
        script, script_args = Path(rest[0]), rest[1:]
        try:
            text = script.read_bytes().decode(errors="replace")
        except OSError as exc:
            raise CommandLineError(f"unable to open file {script}: {exc.strerror}") from None
        for key, value in _ejb_directives(text, script).items():
            ejb.setdefault(key, value)
        from_script = [grammar.read(w)[0][0] for w in sbatch_cli.directives(text)]
        # components (one, or a heterogeneous job's) pair up by position, the command line's winning
        pairs = range(max(len(from_script), len(command_line)))
        components = [
            Component([*(from_script[i].given if i < len(from_script) else []),
                       *(command_line[i].given if i < len(command_line) else [])])
            for i in pairs
        ]  # fmt: skip
    elif rest:
        raise CommandLineError("script arguments are not permitted with --wrap")
    return Request(words, script, script_args, components, command_line[0], ejb, wrap)


# -- what Slurm and the manager say --------------------------------------------------------------
def _sbatch(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sbatch", *args], capture_output=True, text=True, check=False)


def _script_words(req: Request) -> list[str]:
    return ["--wrap", req.wrap] if req.wrap is not None else [str(req.script), *req.script_args]


def _given_pairs(req: Request) -> list[tuple[str, str | None]]:
    """The command line's options as (--long, value) pairs, without --wrap (it travels with the script)."""
    return [("--" + g.option.long, g.value) for g in req.given.given if g.option.long != "wrap"]


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


def _manager(address: str) -> dict | None:
    """The manager's answer to a ping: ``pilot``, the address its pilots reach it at, and
    ``spares``, how many held subjobs it asks for (None: it does not answer)."""
    try:
        # A few seconds: a manager that just started, on a busy login node, still answers.
        reply = request(address, {"op": "ping"}, timeout=PING_TIMEOUT)
    except (OSError, ValueError):
        return None
    return reply if reply.get("ok") else None


def _uses_dmr(req: Request) -> bool:
    text = req.wrap if req.wrap is not None else req.script.read_text(errors="replace")  # type: ignore[union-attr]
    return bool(DMR_MARKERS.search(text or ""))


# what sbatch does with these jobs is not what EJB does with a bundle (option or environment variable)
PASSED_ON = {
    "array": "a job array (its tasks are sbatch's)",
    "wait": "--wait (sbatch waits for the job itself)",
    "test-only": "--test-only (nothing is submitted)",
    "hold": "--hold (the job waits for a release, not for nodes)",
    "dependency": "a dependency (its subjobs could not start before it is satisfied)",
    "begin": "--begin (the job must not start before then)",
}
PASSED_ON_ENV = {"SBATCH_ARRAY_INX": "array", "SBATCH_WAIT": "wait", "SBATCH_HOLD": "hold"}


def passed_on_because(req: Request) -> str | None:
    """Why sbatch gets this job whatever the queue looks like (None: EJB may bundle it)."""
    if len(req.components) > 1:
        return "a heterogeneous job"
    for long, why in PASSED_ON.items():
        if req.components[0].has(long):
            return why
    for var, long in PASSED_ON_ENV.items():
        if os.environ.get(var):
            return f"{PASSED_ON[long]}, from {var}"
    min_procs = int(req.ejb.get("min_procs", 8))
    if (procs := _procs(req)) < min_procs:
        return f"{procs} processor(s), fewer than --ejb-min-procs {min_procs}"
    if not _uses_dmr(req):
        return "the script does not run its application with dmr (no dmr-run / import dmr)"
    return None


def not_bundled_because(req: Request, starts_in: float | None) -> str | None:
    """Why EJB leaves this job to sbatch (None: EJB bundles it; the manager answers)."""
    if (why := passed_on_because(req)) is not None:
        return why
    if starts_in is not None and starts_in <= 5:
        return "it starts now anyway (sbatch --test-only)"
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


# options sbatch also takes from the environment: the command line wins over these, these over #SBATCH lines
FILE_OPTIONS = {"output": "SBATCH_OUTPUT", "error": "SBATCH_ERROR", "open-mode": "SBATCH_OPEN_MODE"}


def files_of(req: Request, env: dict[str, str], cwd: str) -> dict[str, str]:
    """The job's output and error patterns (``-o``/``-e``), ``--open-mode`` ("": the cluster's
    default) and work directory, as sbatch reads them."""
    out: dict[str, str] = {}
    for long, var in FILE_OPTIONS.items():
        value = req.given.value(long)
        if value is None:
            value = env.get(var) or req.options.get(long, "")
        out[long.replace("-", "_")] = value
    out["output"] = out["output"] or "slurm-%j.out"
    out["workdir"] = os.path.join(cwd, req.options.get("chdir", ""))
    return out


def bundle(req: Request, typed: list[str]) -> int:
    """Submit the placeholder J0 (the user's job, its dmr-run a pilot) and hand it to the manager.

    Whatever goes wrong after J0 is in the queue, J0 runs the job by itself: never a lost job.
    ``typed``: the command line as the user typed it (``ejb status`` shows it).
    """
    manager = manager_address(req.ejb.get("manager"))
    hello = _manager(manager) or {}
    pilot_at = str(hello.get("pilot") or manager)
    spares = [secrets.token_hex(12) for _ in range(int(hello.get("spares") or 0))]
    secret = secrets.token_hex(12)
    options = _given_pairs(req)
    argv = jobs.j0_argv(options, _script_words(req))
    env = jobs.pilot_env(os.environ, f"{pilot_at}:{secret}:j0")
    res = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
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
            "command": shlex.join(["ejb-submit", *typed]),
            "files": files_of(req, dict(os.environ), os.getcwd()), "spares": spares,
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
        for path in reply.get("truncate", []):  # J0's files, emptied as sbatch would (J0 appends)
            with contextlib.suppress(FileNotFoundError):
                os.truncate(path, 0)
        if reply.get("spare"):
            _queue_spares(j0, options, _script_words(req), reply["spare"], pilot_at, spares)
        print(f"ejb-submit: job {j0} bundled: it starts in subjobs now (ejb status {j0})", file=sys.stderr)
    return 0


def _queue_spares(
    j0: int, options: jobs.Options, script: list[str], spare: dict, pilot_at: str, secrets_: list[str]
) -> None:
    """The held subjobs a manager that cannot submit as this user asked for, queued as this user
    (the manager reshapes and releases them when it needs a subjob). One that sbatch refuses ends
    the queueing with a warning: the job runs all the same, with fewer subjobs or in J0 alone."""
    for index, secret in enumerate(secrets_):
        argv = jobs.spare_argv(options, script, j0, index, float(spare["limit"]), str(spare["output"]),
                               str(spare["error"]))  # fmt: skip
        env = jobs.pilot_env(os.environ, f"{pilot_at}:{secret}:sub")
        res = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        if res.returncode != 0:
            why = res.stderr.strip() or f"sbatch exited {res.returncode}"
            print(f"ejb-submit: warning: spare {index} of job {j0} not queued ({why})", file=sys.stderr)
            return


def _validate(ejb: dict[str, str]) -> None:
    for key in ("min_procs", "o_max"):
        if key in ejb and not (ejb[key].isdigit() and int(ejb[key]) > 0):
            flag = "--ejb-" + key.replace("_", "-")
            raise SubmitError(f"{flag} must be a positive integer, got {ejb[key]!r}")
    if "migration" in ejb:
        try:
            ok = float(ejb["migration"]) >= 0
        except ValueError:
            ok = False
        if not ok:
            raise SubmitError(f"--ejb-migration must be seconds >= 0, got {ejb['migration']!r}")


def _starts_in(req: Request) -> tuple[float | None, str | None]:
    """(seconds until the job would start, from ``sbatch --test-only``; why not bundled if it fails).
    A job --test-only rejects still goes to sbatch, which may queue it (e.g. more tasks than the
    nodes have CPUs now): the pre-check decides whether EJB helps, never whether it is submitted."""
    test = _sbatch(["--test-only", *[a for a in req.sbatch_args if a != "--parsable"]])
    if test.returncode != 0:
        last = (test.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"sbatch --test-only cannot place it now ({last})"
    try:
        return parse_test_only(test.stderr + test.stdout)[0].timestamp() - time.time(), None
    except ValueError:
        return None, None  # an sbatch whose --test-only line we cannot read: decide without it


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 2
    try:
        ejb, words = split_ejb(argv)  # words: what sbatch gets when EJB does not bundle the job
        _validate(ejb)
        req: Request | None
        try:
            req = parse(argv)
            why = passed_on_because(req)
        except CommandLineError as exc:
            req, why = None, f"ejb-submit could not read the command line ({exc}); sbatch judges it"
        if req is not None:
            _validate(req.ejb)
            ejb = req.ejb
    except SubmitError as exc:
        print(f"ejb-submit: error: {exc}", file=sys.stderr)
        return 2
    try:
        if why is None and req is not None:
            starts_in, why = _starts_in(req)
            why = why or not_bundled_because(req, starts_in)
            if why is None:
                return bundle(req, argv)
        if "require" in ejb:
            raise NotBundled(str(why).removeprefix("warning: "))
    except NotBundled as exc:
        print(f"ejb-submit: error: not submitted (--ejb-require): {exc}", file=sys.stderr)
        return 1
    # sbatch with exactly the words and environment ejb-submit was given (its stdin too: a script
    # may come that way); its output and its verdict are the user's
    rc = subprocess.run(["sbatch", *words], check=False).returncode
    if rc == 0 and why is not None:
        print(f"ejb-submit: submitted with plain sbatch: {why}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())

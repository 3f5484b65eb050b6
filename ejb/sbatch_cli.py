"""sbatch's command line as the installed sbatch reads it: its options (from its own ``--help``), a
reader that splits words as its ``getopt_long`` does, and the ``#SBATCH`` lines of a script.

The option table is not kept by hand: :func:`installed` reads the options of the release on this
machine (22.05, 24.11 and 26.05 differ) from its ``sbatch --help``, then asks that sbatch how each
takes its value, since the help text does not always say (it shows ``--wrap[=command string]`` and
``--export[=names]``, whose value sbatch requires, and ``--get-user-env`` bare, whose value is
optional). An option that takes no value (``--reboot``), an optional one (``--propagate``: a value
only after ``=``) and a required one (``-N 2``, ``--nodes=2``) are then told apart exactly as that
sbatch does, unique prefixes of long options included. The table is cached per sbatch release.
Anything the reader cannot read raises :class:`CommandLineError`: ``ejb-submit`` then hands the
words to sbatch untouched, and sbatch decides.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Takes = Literal["none", "optional", "required"]
Asker = Callable[[str], "Takes | None"]

# "  -N, --nodes=N   ...", "      --propagate[=rlimits] ...", "  -B  --extra-node-info=S[:C[:T]]"
_HELP_LINE = re.compile(r"^ {1,8}(?:-(?P<short>[A-Za-z]),?\s+)?--(?P<long>[a-z0-9][a-z0-9-]*)(?P<arg>\[=|=)?")
HETJOB_SEPARATORS = ("hetjob", "packjob")  # "#SBATCH hetjob" starts a new component
DIRECTIVE = "#SBATCH"
NEVER_PROBED: dict[str, Takes] = {"help": "none", "usage": "none", "version": "none"}  # they print and exit
_TAKES_SHOWN: dict[str, Takes] = {"[=": "optional", "=": "required"}  # by the help line's "[=" or "="
# after the probed option and --usage: sbatch stops at it with an error if --usage was taken as the
# option's value, so a probe never submits anything
PROBE_STOP = "--ejb-probe-stop"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "elastic-slurm" / "sbatch"


class CommandLineError(ValueError):
    """Words the reader cannot read as sbatch's (sbatch itself says what is wrong with them)."""


@dataclass(frozen=True)
class Option:
    long: str  # "nodes"
    short: str | None  # "N"
    takes: Takes


@dataclass(frozen=True)
class Given:
    """One option as read: its value (None: none given) and the words it came from."""

    option: Option
    value: str | None
    words: tuple[str, ...]


@dataclass
class Component:
    """The options of one component of a job (a heterogeneous job has several)."""

    given: list[Given] = field(default_factory=list)

    def value(self, long: str) -> str | None:
        """The last value given for ``long`` ("" for an option given without a value; None: absent)."""
        found = [g.value if g.value is not None else "" for g in self.given if g.option.long == long]
        return found[-1] if found else None

    def has(self, long: str) -> bool:
        return any(g.option.long == long for g in self.given)


class Grammar:
    """sbatch's options: by long name (or a unique prefix of it) and by short letter.

    ``ask(name)``: how the installed sbatch takes an option its help does not list (``--test-only``
    is one), None if it does not know it either.
    """

    def __init__(self, options: list[Option], ask: Asker | None = None) -> None:
        self.options = {o.long: o for o in options}
        self.shorts = {o.short: o for o in options if o.short}
        self.ask = ask

    @classmethod
    def from_help(cls, text: str, takes: dict[str, Takes] | None = None, ask: Asker | None = None) -> Grammar:
        """The options ``sbatch --help`` lists; how each takes its value from ``takes`` (what the
        release answered, :func:`probe`), else as the help text shows it."""
        found: dict[str, Option] = {}
        for line in text.splitlines():
            m = _HELP_LINE.match(line)
            if m is None:
                continue
            shown = _TAKES_SHOWN.get(m["arg"] or "", "none")
            found.setdefault(m["long"], Option(m["long"], m["short"], (takes or {}).get(m["long"], shown)))
        if "nodes" not in found:
            raise CommandLineError("sbatch --help lists no --nodes option: not an sbatch help text")
        for long, how in (takes or {}).items():  # asked about before (hidden from --help)
            found.setdefault(long, Option(long, None, how))
        return cls(list(found.values()), ask)

    def long_option(self, name: str) -> Option:
        """``name`` exactly, or the one option it is a prefix of (as getopt_long)."""
        if name in self.options:
            return self.options[name]
        matches = [o for long, o in self.options.items() if long.startswith(name)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise CommandLineError(f"option '--{name}' is ambiguous")
        takes = self.ask(name) if self.ask is not None and name else None
        if takes is None:
            raise CommandLineError(f"unrecognized option '--{name}'")
        self.options[name] = Option(name, None, takes)
        return self.options[name]

    def short_option(self, letter: str) -> Option:
        try:
            return self.shorts[letter]
        except KeyError:
            raise CommandLineError(f"invalid option -- '{letter}'") from None

    def read(self, words: list[str]) -> tuple[list[Component], list[str]]:
        """The options of each component (``:`` separates them) and what follows: the script and its
        arguments. Reading stops at the first word that is not an option, as sbatch's does."""
        components = [Component()]
        i = 0
        while i < len(words):
            word = words[i]
            if word == ":":
                components.append(Component())
                i += 1
                continue
            if word == "--":
                return components, words[i + 1 :]
            if not word.startswith("-") or word == "-":
                return components, words[i:]
            given, i = self._option(words, i)
            components[-1].given.extend(given)
        return components, []

    def _option(self, words: list[str], i: int) -> tuple[list[Given], int]:
        word = words[i]
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            opt = self.long_option(name)
            if eq and opt.takes == "none":
                raise CommandLineError(f"option '--{opt.long}' doesn't allow an argument")
            if eq:
                return [Given(opt, value, (word,))], i + 1
            if opt.takes == "required":
                if i + 1 >= len(words):
                    raise CommandLineError(f"option '--{opt.long}' requires an argument")
                return [Given(opt, words[i + 1], (word, words[i + 1]))], i + 2
            return [Given(opt, None, (word,))], i + 1
        out: list[Given] = []
        for k in range(1, len(word)):  # -vvH, -N4, -N 4
            opt = self.short_option(word[k])
            rest = word[k + 1 :]
            if opt.takes == "none":
                out.append(Given(opt, None, (word,)))
                continue
            if rest:
                out.append(Given(opt, rest, (word,)))
            elif opt.takes == "required":
                if i + 1 >= len(words):
                    raise CommandLineError(f"option requires an argument -- '{opt.short}'")
                out.append(Given(opt, words[i + 1], (word, words[i + 1])))
                return out, i + 2
            else:
                out.append(Given(opt, None, (word,)))
            break
        return out, i + 1


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def probe(sbatch: str, long: str) -> Takes | None:
    """How this sbatch takes ``--long``'s value (None: it does not know the option): it prints its
    usage for ``--long --usage`` unless the option took ``--usage`` as its (required) value; then
    ``--long=x`` is refused only by an option that takes none."""
    if long in NEVER_PROBED:
        return NEVER_PROBED[long]
    first = _run([sbatch, f"--{long}", "--usage", PROBE_STOP])
    if "unrecognized option" in first.stderr and f"'--{long}'" in first.stderr:
        return None
    if not first.stdout.startswith("Usage:"):
        return "required"
    refused = "doesn't allow an argument" in _run([sbatch, f"--{long}=x", "--usage", PROBE_STOP]).stderr
    return "none" if refused else "optional"


@functools.cache
def installed(sbatch: str = "sbatch") -> Grammar:
    """The grammar of the sbatch on this machine: read once per process, probed once per release."""
    try:
        text = _run([sbatch, "--help"]).stdout
        version = _run([sbatch, "--version"]).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommandLineError(f"cannot run {sbatch} --help: {exc}") from None
    listed = Grammar.from_help(text)
    cached = CACHE / (hashlib.sha256(f"{version}\n{text}".encode()).hexdigest()[:16] + ".json")
    try:
        takes = json.loads(cached.read_text())
    except (OSError, ValueError):
        takes = {long: how for long in listed.options if (how := probe(sbatch, long)) is not None}
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}")
            tmp.write_text(json.dumps(takes, indent=0, sort_keys=True))
            tmp.replace(cached)
        except OSError:
            pass  # no cache: probed again next time
    return Grammar.from_help(text, takes, ask=functools.partial(probe, sbatch))


def directives(text: str) -> list[list[str]]:
    """The words of a script's ``#SBATCH`` lines, one list per component (``#SBATCH hetjob`` or
    ``packjob`` starts the next), read as sbatch does: after the first line, up to the first line
    that is neither blank nor a comment; a word starting with ``#`` ends a line's words."""
    out: list[list[str]] = [[]]
    for n, line in enumerate(text.split("\n")):
        line = line.rstrip("\r")
        if n == 0:
            continue
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        after = line[len(DIRECTIVE) :]
        if not line.startswith(DIRECTIVE) or (after and not after[0].isspace()):
            continue
        words = _words(after)
        if words and words[0] in HETJOB_SEPARATORS:
            out.append([])
            continue
        out[-1].extend(words)
    return out


def _words(text: str) -> list[str]:
    """Whitespace-separated words; quotes group and are removed; a word starting with ``#`` (a
    comment) ends the line."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n or text[i] == "#":
            break
        word, quote = [], None
        while i < n and (quote or not text[i].isspace()):
            c = text[i]
            if quote and c == quote:
                quote = None
            elif not quote and c in "'\"":
                quote = c
            else:
                word.append(c)
            i += 1
        words.append("".join(word))
    return words


def main() -> None:
    """``python -m ejb.sbatch_cli``: the installed sbatch's option table as JSON (for test fixtures)."""
    g = installed()
    print(json.dumps({o.long: o.takes for o in g.options.values()}, indent=0, sort_keys=True))


if __name__ == "__main__":
    main()

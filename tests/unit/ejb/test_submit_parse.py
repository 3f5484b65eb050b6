"""ejb-submit reads a job as the installed sbatch does (its option table, recorded here for each
release), then #SBATCH lines; EJB's own words apart; which jobs it leaves to sbatch and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ejb.sbatch_cli import CommandLineError, Grammar
from ejb.submit import SubmitError, not_bundled_because, parse, passed_on_because

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"


def grammar(release: str = "22.05") -> Grammar:
    takes = json.loads((FIXTURES / f"sbatch-takes-{release}.json").read_text())
    return Grammar.from_help((FIXTURES / f"sbatch-help-{release}.txt").read_text(), takes)


G = grammar()


def script(tmp_path, body: str):  # noqa: ANN001, ANN201
    path = tmp_path / "job.sh"
    path.write_text(body)
    return path


def test_command_line_beats_directives_and_ejb_words_never_reach_sbatch(tmp_path):
    path = script(tmp_path, "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --time=10 -J named\n#EJB --o-max 4\n"
                            "#SBATCH --ntasks-per-node 4\necho hi\n#SBATCH -N 99\n")  # fmt: skip
    argv = ["-N", "4", "--ejb-min-procs", "16", "--parsable", "--ejb-migration=60", str(path), "arg1"]
    req = parse(argv, G)
    assert req.sbatch_args == ["-N", "4", "--parsable", str(path), "arg1"]
    assert req.script == path and req.script_args == ["arg1"]
    assert req.options["nodes"] == "4"  # the command line wins; #SBATCH after the first command is ignored
    assert req.options["time"] == "10" and req.options["job-name"] == "named"
    assert req.options["ntasks-per-node"] == "4" and req.parsable
    assert req.ejb == {"min_procs": "16", "migration": "60", "o_max": "4"}


def test_ejb_require_is_a_flag_on_the_command_line_or_in_the_script(tmp_path):
    req = parse(["--ejb-require", "-N", "2", "--wrap", "sleep 1"], G)
    assert req.required and req.sbatch_args == ["-N", "2", "--wrap", "sleep 1"]
    path = script(tmp_path, "#!/bin/bash\n#EJB --require --o-max 2\necho hi\n")
    req = parse(["-N", "2", str(path)], G)
    assert req.required and req.ejb == {"require": "yes", "o_max": "2"}
    assert not parse(["--wrap", "x"], G).required


def test_wrap_short_forms_and_unique_prefixes():
    req = parse(["-N4", "-t", "5", "--wra", "dmr-run -- python app.py"], G)
    assert req.wrap == "dmr-run -- python app.py" and req.script is None
    assert req.options["nodes"] == "4" and req.options["time"] == "5"
    req = parse(["--ntasks-per-n=2", "-vvH", "--nodes", "3", "--wrap=true"], G)
    assert req.options["ntasks-per-node"] == "2" and req.options["nodes"] == "3" and "hold" in req.options


@pytest.mark.parametrize(
    "flag", ["--get-user-env", "--x11", "--propagate", "--reboot", "--exclusive", "--nice"]
)
def test_an_option_whose_value_is_optional_or_absent_leaves_the_script_alone(tmp_path, flag):
    path = script(tmp_path, "#!/bin/bash\nsrun true\n")
    g = grammar("24.11")
    if flag.lstrip("-") not in g.options:  # --x11: only in an sbatch built with X11 support
        with pytest.raises(CommandLineError, match="unrecognized option"):
            parse([flag, str(path)], g)
        return
    req = parse([flag, str(path)], g)
    assert req.script == path and req.sbatch_args == [flag, str(path)]


def test_values_sbatch_requires_are_taken_from_the_next_word_whatever_its_help_shows():
    # the help text shows --wrap[=command string] and --export[=names]; sbatch requires both values
    req = parse(["--export", "ALL", "--wrap", "hostname"], G)
    assert req.wrap == "hostname" and req.options["export"] == "ALL"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no batch script"),
        (["-N"], "requires an argument"),
        (["--ntas", "2", "x.sh"], "ambiguous"),
        (["--nod", "2", "x.sh"], "ambiguous"),  # --nodes, --nodefile, --nodelist: sbatch says so too
        (["--no-such-option", "x.sh"], "unrecognized option"),
        (["/no/such/script.sh"], "unable to open file"),
        (["--wrap", "true", "extra"], "not permitted with --wrap"),
    ],
)
def test_what_only_sbatch_can_judge(argv, message):
    with pytest.raises(CommandLineError, match=message):
        parse(argv, G)


def test_unknown_ejb_directive_is_a_user_mistake(tmp_path):
    with pytest.raises(SubmitError, match="unknown #EJB option --speed"):
        parse([str(script(tmp_path, "#!/bin/sh\n#EJB --speed 3\ntrue\n"))], G)


def test_directives_as_sbatch_reads_them(tmp_path):
    body = ("#!/bin/tcsh\r\n#SBATCH -N 3   # three nodes\r\n#SBATCH\t--job-name='my job'\r\n\r\n"
            "# a comment\r\n#SBATCHX --bogus\r\n#SBATCH --time 1-02:03:04\r\nsrun a.out\r\n"
            "#SBATCH -N 9\r\n")  # fmt: skip
    req = parse([str(script(tmp_path, body))], G)
    assert req.options["nodes"] == "3" and req.options["job-name"] == "my job"
    assert req.options["time"] == "1-02:03:04"


def test_heterogeneous_jobs_on_the_command_line_and_in_the_script(tmp_path):
    plain = script(tmp_path, "#!/bin/bash\nsrun true\n")
    req = parse(["-N2", ":", "-N1", str(plain)], G)
    assert len(req.components) == 2 and req.components[1].value("nodes") == "1"
    assert passed_on_because(req) == "a heterogeneous job"
    het = tmp_path / "het.sh"
    het.write_text("#!/bin/bash\n#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH -N 1\nsrun true\n")
    req = parse([str(het)], G)
    assert [c.value("nodes") for c in req.components] == ["2", "1"]


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--array=1-10%2"], "a job array"),
        (["-d", "afterok:12:13"], "a dependency"),
        (["--begin=now+1hour"], "--begin"),
        (["-H"], "--hold"),
        (["-W"], "--wait"),
        (["--test-only"], "--test-only"),
    ],
)
def test_jobs_sbatch_keeps_whatever_the_queue(tmp_path, extra, reason):
    dmr_job = script(tmp_path, "#!/bin/bash\ndmr-run -- python app.py\n")
    # --test-only is hidden from sbatch's --help: the grammar asks sbatch (here: as 22.05 answers)
    g = grammar()
    g.ask = lambda name: "none" if name == "test-only" else None
    req = parse(["-N", "8", *extra, str(dmr_job)], g)
    assert reason in str(passed_on_because(req))


def test_an_array_from_the_environment_is_left_to_sbatch(tmp_path, monkeypatch):
    dmr_job = script(tmp_path, "#!/bin/bash\ndmr-run -- python app.py\n")
    monkeypatch.setenv("SBATCH_ARRAY_INX", "1-4")
    assert "from SBATCH_ARRAY_INX" in str(passed_on_because(parse(["-N", "8", str(dmr_job)], G)))


def test_reasons_to_leave_a_job_to_sbatch(tmp_path):
    dmr_job = script(tmp_path, "#!/bin/bash\ndmr-run -- python app.py\n")
    small = parse(["-N", "2", str(dmr_job)], G)
    assert "fewer than --ejb-min-procs 8" in not_bundled_because(small, starts_in=600)
    big = parse(["-N", "8", str(dmr_job)], G)
    assert "starts now anyway" in not_bundled_because(big, starts_in=0)
    plain = parse(["-N", "8", "--wrap", "srun ./a.out"], G)
    assert "does not run its application with dmr" in not_bundled_because(plain, starts_in=600)
    down = parse(["-N", "8", "--ejb-manager", "127.0.0.1:1", str(dmr_job)], G)
    assert "EJB manager at 127.0.0.1:1 is not running" in not_bundled_because(down, starts_in=600)


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_every_release_table_reads_the_common_options(release):
    g = grammar(release)
    assert {g.options[n].takes for n in ("nodes", "time", "wrap", "export", "array")} == {"required"}
    assert g.options["reboot"].takes == "none" and g.options["propagate"].takes == "optional"
    assert g.shorts["N"].long == "nodes" and g.shorts["H"].takes == "none"

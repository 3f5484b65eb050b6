"""ejb-submit reads a job as sbatch does: options, then #SBATCH lines; EJB's own words apart."""

from __future__ import annotations

import pytest

from ejb.submit import SubmitError, not_bundled_because, parse


def script(tmp_path, body: str):  # noqa: ANN001, ANN201
    path = tmp_path / "job.sh"
    path.write_text(body)
    return path


def test_command_line_beats_directives_and_ejb_words_never_reach_sbatch(tmp_path):
    path = script(tmp_path, "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --time=10 -J named\n#EJB --o-max 4\n"
                            "#SBATCH --ntasks-per-node 4\necho hi\n#SBATCH -N 99\n")  # fmt: skip
    req = parse(["-N", "4", "--ejb-min-procs", "16", "--parsable", "--ejb-migration=60", str(path), "arg1"])
    assert req.sbatch_args == ["-N", "4", "--parsable"]
    assert req.script == path and req.script_args == ["arg1"]
    assert req.options["nodes"] == "4"  # the command line wins; #SBATCH after the first command is ignored
    assert req.options["time"] == "10" and req.options["job-name"] == "named"
    assert req.options["ntasks-per-node"] == "4" and req.parsable
    assert req.ejb == {"min_procs": "16", "migration": "60", "o_max": "4"}


def test_ejb_require_is_a_flag_on_the_command_line_or_in_the_script(tmp_path):
    req = parse(["--ejb-require", "-N", "2", "--wrap", "sleep 1"])
    assert req.required and req.sbatch_args == ["-N", "2", "--wrap", "sleep 1"]
    path = script(tmp_path, "#!/bin/bash\n#EJB --require --o-max 2\necho hi\n")
    req = parse(["-N", "2", str(path)])
    assert req.required and req.ejb == {"require": "yes", "o_max": "2"}
    assert not parse(["--wrap", "x"]).required


def test_wrap_and_short_forms():
    req = parse(["-N4", "-t", "5", "--wrap", "dmr-run -- python app.py"])
    assert req.wrap == "dmr-run -- python app.py" and req.script is None
    assert req.options["nodes"] == "4" and req.options["time"] == "5"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no batch script"),
        (["-N"], "needs a value"),
        (["/no/such/script.sh"], "unable to open file"),
    ],
)
def test_user_mistakes(argv, message):
    with pytest.raises(SubmitError, match=message):
        parse(argv)


def test_unknown_ejb_directive(tmp_path):
    with pytest.raises(SubmitError, match="unknown #EJB option --speed"):
        parse([str(script(tmp_path, "#!/bin/sh\n#EJB --speed 3\ntrue\n"))])


def test_reasons_to_leave_a_job_to_sbatch(tmp_path):
    dmr_job = script(tmp_path, "#!/bin/bash\ndmr-run -- python app.py\n")
    small = parse(["-N", "2", str(dmr_job)])
    assert "fewer than --ejb-min-procs 8" in not_bundled_because(small, starts_in=600)
    big = parse(["-N", "8", str(dmr_job)])
    assert "starts now anyway" in not_bundled_because(big, starts_in=0)
    plain = parse(["-N", "8", "--wrap", "srun ./a.out"])
    assert "does not run its application with dmr" in not_bundled_because(plain, starts_in=600)
    down = parse(["-N", "8", "--ejb-manager", "127.0.0.1:1", str(dmr_job)])
    assert "EJB manager at 127.0.0.1:1 is not running" in not_bundled_because(down, starts_in=600)

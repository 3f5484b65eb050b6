"""FS refuses impossible arguments with one argparse line (exit code 2), before any MPI."""

from __future__ import annotations

import pytest

from dmr_apps.fs import parse


@pytest.mark.parametrize(
    "args",
    [
        ["--max", "0"],
        ["--steps", "-3"],
        ["--state-mb", "-1"],
        ["--min", "4", "--max", "2"],
        ["--factor", "1"],
    ],
)
def test_bad_arguments_exit_2(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse(args)
    assert exit_info.value.code == 2
    assert "fs: error:" in capsys.readouterr().err


def test_good_arguments_pass():
    assert parse(["--steps", "3", "--max", "8"]).max_procs == 8

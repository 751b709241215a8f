"""One command-line vocabulary: every subcommand names the same thing with the same flag
(`gpusim.cli.args.VOCABULARY`, docs/cli.md). Walks every subcommand's parser."""

import argparse

import pytest

from gpusim.cli import main as cli_main
from gpusim.cli.args import METRICS, RENAMED, VOCABULARY

# Commands that can run longer than a couple of seconds: each takes --quiet (its progress bars off).
LONG_RUNNING = {"run", "sweep", "compare", "program", "compile", "validate", "bench"}
# Not yet on the vocabulary: remove a command from here once it is (the test then holds it to it).
PENDING: set[str] = set()


def _subparsers():
    parser = cli_main.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


SUBPARSERS = _subparsers()


def _flags(p):
    """flag -> its action, the visible ones (renamed flags are hidden)."""
    return {s: a for a in p._actions for s in a.option_strings if a.help != argparse.SUPPRESS}


def test_every_command_is_checked():
    assert set(cli_main.SUBCOMMANDS) == set(SUBPARSERS)
    assert LONG_RUNNING <= set(SUBPARSERS) and PENDING <= set(SUBPARSERS)


@pytest.mark.parametrize("name", sorted(set(SUBPARSERS) - PENDING))
def test_command_speaks_the_vocabulary(name):
    flags = _flags(SUBPARSERS[name])
    for old in RENAMED:
        assert old not in flags, f"gpusim {name}: {old} is {RENAMED[old]} now"
    if "--config" in flags:
        a = flags["--config"]
        assert a.dest == "config" and "-c" in a.option_strings
    if "--config-set" in flags:
        a = flags["--config-set"]
        assert a.dest == "config_sets" and isinstance(a, argparse._AppendAction)
        assert a.metavar in ("FIELD=VALUE", "FIELD=V[,V...]")
    if "--set" in flags:
        a = flags["--set"]
        assert a.dest == "sets" and isinstance(a, argparse._AppendAction)
        assert a.metavar in ("PARAM=VALUE", "PARAM=V[,V...]"), f"gpusim {name}: --set takes parameters"
    if "--json" in flags:
        a = flags["--json"]
        assert a.nargs == "?" and a.const == "-", f"gpusim {name}: --json [FILE|-]"
    if "--csv" in flags:
        assert flags["--csv"].metavar == "FILE"
    if "--quiet" in flags:
        assert "-q" in flags["--quiet"].option_strings
    if name in LONG_RUNNING:
        assert "--quiet" in flags, f"gpusim {name} can run long: it needs --quiet"
    if "--warp-scheduler" in flags:
        assert flags["--warp-scheduler"].dest == "warp_scheduler"
    for flag in ("--metric", "--objective"):  # what "best" means, or what a tuner minimises: the same two words
        if flag in flags and name != "plot":  # (plot's names any column too: tests/sweep/test_metric_energy.py)
            assert tuple(flags[flag].choices) == METRICS and flags[flag].default == "time", f"gpusim {name}: {flag}"


@pytest.mark.parametrize(("argv", "new"), [
    (["occupancy", "--param", "n=4"], "--set"),
    (["info", "--set", "chip.sm_count=8"], "--config-set (--set is a parameter of what runs)"),
    (["validate", "--set", "x=1"], "--config-set (--set is a parameter of what runs)"),
    (["sweep", "saxpy", "--config-override", "sm_count=8"], "--config-set"),
    (["sweep", "saxpy", "--scheduler", "tcp://h:1"], "--warp-scheduler (the Dask scheduler's address is "
                                                     "--dask-scheduler)"),
])
def test_renamed_flags_say_what_replaced_them(capsys, argv, new):
    with pytest.raises(SystemExit) as exc:  # (argparse's own exit: the one-line error, then the help hint)
        cli_main.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].endswith(f"renamed: use {new}") and err[1].startswith("see gpusim ") and len(err) == 2


def test_the_vocabulary_is_documented():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    for flag in VOCABULARY:
        assert f"`{flag}" in doc
    for old in RENAMED:
        assert f"`{old}`" in doc


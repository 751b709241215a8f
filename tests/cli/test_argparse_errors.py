"""Every argparse error of every subcommand is one line and a pointer to the help, exit status 2 (issue 40,
item 2): `gpusim run: error: argument --max-cycles: -1 is below the minimum 1` then `see gpusim run --help`,
not nine lines of usage first. The test walks every subcommand's numeric options with a bad value each."""

import argparse

import pytest

from gpusim.cli.main import SUBCOMMANDS, build_parser, main

NUMERIC = ("integer", "integers", "number")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: action.choices[name] for name in SUBCOMMANDS}


def _bad(action: argparse.Action) -> str:
    """A value the option's type refuses: below its range where it has one, else not a number."""
    try:
        action.type("-1")
    except argparse.ArgumentTypeError:
        return "-1"
    return "abc"


CASES = [(name, action.option_strings[0], _bad(action)) for name, p in _subparsers().items() for action in p._actions
         if action.option_strings and getattr(action.type, "__name__", None) in NUMERIC]


def test_every_subcommand_has_numeric_options_to_walk():
    assert len(CASES) >= 25 and {"run", "sweep", "step", "compile", "bench"} <= {c[0] for c in CASES}


@pytest.mark.parametrize(("name", "flag", "value"), CASES, ids=[f"{n}{f}" for n, f, _ in CASES])
def test_a_bad_number_is_one_line_and_the_help_hint(name, flag, value, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, flag, value])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    first, hint, rest = err.split("\n", 2)
    assert first.startswith(f"gpusim {name}: error: argument {flag}") and f": {value}" in first.replace("'", "")
    assert hint == f"see gpusim {name} --help" and rest == "" and out == ""


@pytest.mark.parametrize(("argv", "first"), [
    (["run", "saxpy", "--max-cycles", "-1"], "gpusim run: error: argument --max-cycles: -1 is below the minimum 1"),
    (["run", "saxpy", "--seed", "-1"], "gpusim run: error: argument --seed: -1 is below the minimum 0"),
    (["run", "saxpy", "--max-steps", "0"], "gpusim run: error: argument --max-steps: 0 is below the minimum 1"),
    (["run"], "gpusim run: error: the following arguments are required: workload"),
    (["run", "saxpy", "--nope"], "gpusim: error: unrecognized arguments: --nope"),
    (["nope"], "gpusim: error: argument COMMAND: invalid choice: 'nope'"),
])
def test_the_issues_examples(argv, first, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(first) and err.count("\n") == 2 and "usage:" not in err

"""`--config-set` means the same in every subcommand (issue 37, item 6): a field by its full dotted name
or a unique tail of it, an unknown one refused with the names it may have meant, and the error blames the
flag, not a line of the YAML file."""

import json

import pytest

from gpusim.cli.main import main
from gpusim.config import load_config

# one command a subcommand that takes --config-set, each cheap (small sizes, no simulation where it can)
COMMANDS = {
    "run": ["run", "saxpy", "--set", "n=1024", "--functional", "--json", "-"],
    "info": ["info", "--json"],
    "occupancy": ["occupancy", "--block-size", "256", "--json"],
    "compile": ["compile", "mlp2", "--cost", "analytical", "--json", "-"],
    "step": ["step", "saxpy", "--set", "n=64", "--steps", "3"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_short_name_overrides_the_field(name, capsys):
    assert main(COMMANDS[name] + ["--config-set", "sm_count=54"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    if name == "info":
        assert json.loads(out)["config"]["chip"]["sm_count"] == 54
    if name == "run":
        assert json.loads(out)["config_hash"] == load_config("a100", overrides={"chip.sm_count": 54}).hash()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_unknown_name_is_refused_with_suggestions_naming_the_flag(name, capsys):
    assert main(COMMANDS[name] + ["--config-set", "sm_cnt=54"]) == 2
    err = capsys.readouterr().err
    assert err == f"gpusim {name}: error: --config-set sm_cnt: not a config field; did you mean chip.sm_count?\n"


def test_an_override_that_breaks_a_check_is_blamed_not_the_yaml(capsys):
    assert main(["info", "--config-set", "dram.t_cl_ns=900"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusim info: error: --config-set dram.t_cl_ns: makes dram.latency_cycles fail its check: ")
    assert "a100.yaml" not in err

"""Start-up: commands that simulate nothing import nothing heavy (issue 36). Each command runs in a fresh
interpreter under `python -X importtime`, and the test reads the modules it imported: a budget on *what*
is imported, which a loaded CI machine cannot make flaky, rather than on wall time (docs/bench.md gives
the measured times)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import gpusim
from gpusim.cli.commands import COMMANDS

# what a command that simulates nothing must not wait for: the compiled engine and what it needs, the
# compiler, charts, bfloat16, ONNX, and every layer that pulls them in
HEAVY = ("numba", "llvmlite", "scipy", "matplotlib", "ml_dtypes", "onnx", "tqdm", "gpusim.timing",
         "gpusim.compiler", "gpusim.functional", "gpusim.isa", "gpusim.stats", "gpusim.sweep", "gpusim.analysis",
         "gpusim.plot")
# `--version` and `--help` read no YAML and no array either
BARE = (*HEAVY, "numpy", "yaml", "gpusim.config", "gpusim.workloads", "gpusim.system")


def imported(*argv: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules `gpusim ARGV` imports, from `python -X importtime`'s report on stderr."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpusim", *argv], capture_output=True,
                       text=True, timeout=120)
    mods = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", p.stderr, re.M))
    assert "gpusim.cli.main" in mods, p.stderr[-2000:]  # (the report was read)
    return mods, p


def heavy_in(mods: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == b or m.startswith(b + ".") for b in banned))


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_no_layer(argv):
    mods, p = imported(*argv)
    assert p.returncode == 0 and p.stdout.startswith("gpusim " if argv == ["--version"] else "usage: gpusim")
    assert heavy_in(mods, BARE) == []


@pytest.mark.parametrize("argv", [["list"], ["info", "--config", "a100"],
                                  ["occupancy", "--config", "a100", "--block-size", "256", "--regs", "32"]])
def test_commands_that_simulate_nothing_import_no_engine(argv):
    mods, p = imported(*argv)
    assert p.returncode == 0, p.stderr[-2000:]
    assert heavy_in(mods, HEAVY) == []
    assert p.stdout  # (they printed their report)


def test_a_functional_run_imports_no_engine():
    """`gpusim run --functional` executes the kernel without the timing model: no Numba, no compiler."""
    mods, p = imported("run", "saxpy", "--functional", "--set", "n=1024")
    assert p.returncode == 0 and "verified             yes" in p.stdout, p.stderr[-2000:]
    assert heavy_in(mods, ("numba", "llvmlite", "matplotlib", "ml_dtypes", "onnx", "gpusim.timing", "gpusim.stats",
                           "gpusim.compiler", "gpusim.sweep")) == []


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_help_imports_no_engine(command):
    mods, p = imported(command, "--help")
    assert p.returncode == 0 and p.stdout.startswith(f"usage: gpusim {command}"), p.stderr[-2000:]
    assert heavy_in(mods, HEAVY) == []
    others = sorted(f"gpusim.cli.{c}_cmd" for c in COMMANDS if c != command)
    assert [m for m in others if m in mods] == []  # only the chosen subcommand's module is imported


def test_compile_help_lists_the_compilers_choices_without_it():
    """`compile --help` spells the compiler's choices (tests below check them against the compiler) and
    imports neither the compiler nor numpy nor any YAML."""
    mods, p = imported("compile", "--help")
    assert heavy_in(mods, BARE) == []
    text = " ".join(p.stdout.split())
    for choices in ("{analytical,calibrated,simulated}", "{grid,local,anneal}", "{f16,bf16,int8}", "{sgd,adam}",
                    "{tensor,data}", "{auto,on,off}", "mlp2, attention, transformer, recommender"):
        assert choices in text


def test_compile_cmd_spells_the_compilers_choices():
    from gpusim.analysis.sampling import SAMPLE_MODES
    from gpusim.cli import compile_cmd
    from gpusim.compiler.accuracy import TOLERANCES
    from gpusim.compiler.cost import MODELS
    from gpusim.compiler.models import BUILTIN
    from gpusim.compiler.passes.precision import PRECISIONS
    from gpusim.compiler.shard import STRATEGIES as PARALLEL
    from gpusim.compiler.train import OPTIMIZERS
    from gpusim.compiler.tune import STRATEGIES

    assert compile_cmd.BUILTIN == tuple(BUILTIN)
    assert (compile_cmd.MODELS, compile_cmd.STRATEGIES, compile_cmd.PARALLEL, compile_cmd.PRECISIONS,
            compile_cmd.OPTIMIZERS, compile_cmd.SAMPLE_MODES) == (MODELS, STRATEGIES, PARALLEL, PRECISIONS,
                                                                 OPTIMIZERS, SAMPLE_MODES)
    assert compile_cmd.TOLERANCES == TOLERANCES


def test_compiler_package_is_lazy_and_registers_control_flow_rules():
    """Importing gpusim.compiler loads no layer below it nor the compiler's own heavy modules, yet `if`
    and `loop` have their type rules and numpy semantics; every public name is its module's object (the
    functions named as their modules included, whichever was imported first)."""
    p = subprocess.run([sys.executable, "-c", "import sys, gpusim.compiler\n"
                        "from gpusim.compiler.ops import OPS\n"
                        "print(sorted(m for m in sys.modules if m.startswith('gpusim.') and "
                        "not m.startswith('gpusim.compiler')))\n"
                        "print(OPS['if'].infer.__module__, OPS['loop'].compute.__module__)"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:2] == ["['gpusim.errors', 'gpusim.lazy', 'gpusim.version']",
                                        "gpusim.compiler.control_flow gpusim.compiler.evaluate"]
    import importlib

    import gpusim.compiler as compiler
    import gpusim.compiler.lower  # noqa: F401  (binds the submodule to the package's name, which stays the function)

    for name in compiler.__all__:
        module = importlib.import_module(compiler._LAZY.get(name, f"gpusim.compiler.{name}"))
        assert getattr(compiler, name) is (module if name == "models" else getattr(module, name))
    assert callable(compiler.lower) and compiler.lower.__module__ == "gpusim.compiler.lower.lowering"


def test_import_gpusim_loads_no_layer():
    p = subprocess.run([sys.executable, "-c", "import sys, gpusim; print(sorted(m for m in sys.modules "
                        "if m.startswith('gpusim')))"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "['gpusim', 'gpusim.lazy', 'gpusim.version']"


def test_lazy_public_names_are_the_modules_own():
    """Every public name of gpusim and gpusim.workloads, imported on first use, is the object its module
    defines (and a name that is not there is an AttributeError, as before)."""
    import importlib

    import gpusim.workloads as workloads

    for package in (gpusim, workloads):
        for name in package.__all__:
            if name in package._LAZY:
                assert getattr(package, name) is getattr(importlib.import_module(package._LAZY[name]), name)
            else:
                assert getattr(package, name) is not None
        with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
            package.nothing_here  # noqa: B018
    assert gpusim.stats.VERDICTS  # a layer reached through the package, as the docstring's example does


def test_spelled_defaults_agree_with_their_source():
    """The two defaults the CLI spells (so that --help imports neither the executor nor the sweep) are
    the ones the code uses."""
    from gpusim.cli import args, run_cmd, sweep_cmd
    from gpusim.functional.warps import DEFAULT_MAX_STEPS_PER_WARP
    from gpusim.stats.ranking import METRICS
    from gpusim.sweep.result import TIE_PCT

    assert run_cmd.MAX_STEPS_SHOWN == f"{DEFAULT_MAX_STEPS_PER_WARP:,}"
    assert sweep_cmd.TIE_PCT == TIE_PCT
    assert args.METRICS == METRICS


def test_list_describes_each_workload_as_loading_it_does():
    """`gpusim list` reads workload.yaml only (gpusim.workloads.catalog.describe): its description,
    defaults and folder are those of the loaded workload."""
    from gpusim.workloads.catalog import describe, list_workloads
    from gpusim.workloads.loader import load_workload

    for name in list_workloads():
        info, wl = describe(name), load_workload(name)
        assert (info.name, info.description, info.folder, info.defaults) == (wl.name, wl.description, wl.folder,
                                                                            wl.defaults)


def test_list_names_the_line_of_a_bad_default(tmp_path, monkeypatch, capsys):
    """What `gpusim list` reads of a workload it checks as loading it would: a default that is not a number
    is one line naming the file, the line and the field."""
    from gpusim.cli.main import main

    folder = tmp_path / "broken_defaults"
    folder.mkdir()
    (folder / "workload.yaml").write_text("kernel: k.ptx\nparams:\n  n: many\nlaunch: {grid: 1, block: 1}\n"
                                          "test_sizes: [{}]\n")
    monkeypatch.setenv("GPUSIM_WORKLOAD_PATH", str(tmp_path))
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert err == f"gpusim list: error: {folder / 'workload.yaml'}:2: params.n: default must be a number, got 'many'\n"

"""`gpusim compile --tune --refit` never writes the installed package (issue 37, item 9): the refitted
calibration goes to a file of the user's (default: calibration.json in the cache folder, started from a
copy of the shipped one), and `--calibration FILE` reads it back."""

import json

import pytest

from gpusim.cli.main import main
from gpusim.compiler.cost import Calibration
from gpusim.compiler.cost.calibrated import DEFAULT_PATH
from gpusim.compiler.tune import Tuner

ARGV = ["compile", "mlp2", "--config", "a100", "--tune", "--cost", "analytical", "--budget", "2"]


@pytest.fixture
def refits(monkeypatch):
    """Tuner.refit as it is, on two made-up simulations (the analytical tuner simulates none)."""
    paths = []

    def refit(self, path=None, prior=4.0):
        paths.append(path)
        before = Calibration.load(path)  # the file is there before the refit reads it
        after = Calibration(tuple(c * 1.5 for c in before.coefficients), {"refits": 1})
        after.save(path)
        return after

    monkeypatch.setattr(Tuner, "refit", refit)
    return paths


def test_the_default_refit_lands_in_the_cache_folder(tmp_path, monkeypatch, refits, capsys):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "cache"))
    shipped = DEFAULT_PATH.read_text()
    assert main(ARGV + ["--refit", "--quiet"]) == 0
    target = tmp_path / "cache" / "calibration.json"
    assert refits == [target] and DEFAULT_PATH.read_text() == shipped
    saved = json.loads(target.read_text())
    assert saved["coefficients"] == [c * 1.5 for c in json.loads(shipped)["coefficients"]]
    assert f"written to {target} (use it with --calibration {target})" in capsys.readouterr().out


def test_a_named_file_and_reading_it_back(tmp_path, refits, capsys):
    mine = tmp_path / "mine.json"
    assert main(ARGV + ["--refit", str(mine), "--quiet"]) == 0
    assert refits == [mine] and mine.is_file()
    capsys.readouterr()
    cycles = []
    for extra in ([], ["--calibration", str(mine)]):
        assert main(["compile", "mlp2", "--config", "a100", "--cost", "calibrated", *extra, "--json", "-"]) == 0
        cycles.append(json.loads(capsys.readouterr().out)["total"]["kernel_cycles"])
    assert cycles[1] == pytest.approx(1.5 * cycles[0], rel=0.02)  # every coefficient x 1.5


def test_the_packages_file_is_refused(refits, capsys):
    assert main(ARGV + ["--refit", str(DEFAULT_PATH)]) == 2
    assert "that is the installed package's calibration" in capsys.readouterr().err and refits == []


def test_the_python_api_never_writes_the_package_either(tmp_path, monkeypatch):
    """Tuner.refit() with no path writes calibration.json in the cache folder (a copy of the shipped one
    first), and refuses the package's own file before touching anything."""
    from gpusim.compiler.errors import CompilerError
    from gpusim.compiler.tune import refit_file
    from gpusim.config import load_config

    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "cache"))
    target = refit_file()
    assert target == tmp_path / "cache" / "calibration.json"
    assert target.read_text() == DEFAULT_PATH.read_text()
    tuner = Tuner(load_config("a100"), None, cache=False)
    tuner.simulations = [(None, 1.0)]  # the file is checked before any kernel is read
    with pytest.raises(CompilerError, match="that is the installed package's calibration"):
        tuner.refit(DEFAULT_PATH)

"""`gpusim run saxpy_cu --source`: the per-line view is on the CUDA C file (through PTX `.loc`), and the
line that loads and uses x[i] and y[i] carries the kernel's long-scoreboard stalls."""

from gpusim.cli import main as cli_main


def test_source_view_of_a_cuda_kernel(capsys, monkeypatch):
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", ["run"])
    assert cli_main.main(["run", "saxpy_cu", "--set", "n=4096", "--source"]) == 0
    out = capsys.readouterr().out
    view = out[out.index("-- "):].splitlines()
    assert view[0].endswith("saxpy_cu/saxpy.cu")
    [body] = [ln for ln in view if ln.rstrip().endswith("y[i] = a * x[i] + y[i];")]
    cells = body.split()
    assert cells[0] == "6" and "long_scoreboard" in cells and float(cells[3]) > 50  # most samples, on the loads' use
    assert view[2].split()[:2] == ["1", "//"]  # a line without instructions: printed plainly

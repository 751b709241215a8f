"""CLI: run (verify, JSON, failure exit), asm, list, and one-line errors."""

import json

import numpy as np

from gpusim.cli.main import main
from tests.cli.broken import broken_vecadd


def test_run_prints_summary_and_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["run", "saxpy", "--config", "a100", "--set", "n=1000", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verified             yes" in text and "SIMT efficiency" in text
    data = json.loads(out.read_text())
    assert data["verified"] is True and data["config"] == "a100" and data["params"]["n"] == 1000
    assert data["launch"]["grid"] == [4, 1, 1]
    # 1000 threads in 4 blocks of 256: 32 warps; the 3 warps past n (and 24 lanes of one) exit early
    assert data["stats"]["warps"] == 32 and data["stats"]["global_bytes_read"] == 8000
    assert data["stats"]["global_bytes_written"] == 4000
    assert data["theoretical_occupancy"]["occupancy"] == 1.0


def test_run_json_to_stdout_is_pure_json(capsys):
    assert main(["run", "vecadd", "--set", "n=100", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stats"]["thread_instructions"] > 0


def test_failed_verification_exits_nonzero_with_first_indices(tmp_path, capsys):
    wl = broken_vecadd(tmp_path, 7, 5.0)
    code = main(["run", str(wl), "--set", "n=64"])
    err = capsys.readouterr().err
    assert code == 1
    assert "differs from the reference at 1 of 64 elements; first at index 7" in err


def test_bad_kernel_is_one_line_error(tmp_path, capsys):
    k = tmp_path / "bad.sasm"
    k.write_text(".kernel k\n    frob.u32 %r0\n")
    assert main(["asm", str(k)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"gpusim asm: error: {k}:2:5: unknown opcode (at 'frob')"


def test_bad_launch_parameter_is_one_line_error(capsys):
    assert main(["run", "vecadd", "--set", "block=2048"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "gpusim run: error: launch: block: block.x is 2048; the limit is 1024"


def test_asm_shows_reconvergence(capsys):
    assert main(["asm", "divergence"]) == 0
    out = capsys.readouterr().out
    assert "reconverge at pc" in out and "BRANCH" in out


def test_asm_plain_round_trips(capsys):
    from gpusim import assemble, load_workload

    assert main(["asm", "matmul_tiled", "--plain"]) == 0
    assert assemble(capsys.readouterr().out) == load_workload("matmul_tiled").program


def test_list_names_workloads_and_configs(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("saxpy", "pointer_chase", "a100", "gtx980", "cpu_like"):
        assert name in out


def test_occupancy_from_workload(capsys):
    assert main(["occupancy", "--config", "a100", "--workload", "matmul_tiled", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    from gpusim import load_workload

    prog = load_workload("matmul_tiled").program
    assert data["block_size"] == 256 and data["regs_per_thread"] == prog.regs_per_thread
    assert data["smem_per_block"] == prog.shared_bytes == 2 * 16 * 16 * 4


def test_python_m_gpusim_works():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "gpusim", "info", "--config", "gtx980", "--json", "-"],
                       capture_output=True, text=True, check=True)
    assert json.loads(r.stdout)["derived"]["total_fp32_cores"] == 2048
    assert np.isclose(json.loads(r.stdout)["derived"]["peak_dram_bandwidth_gbps"], 224)

"""The ptxas model as a whole: every shipped workload keeps its values with it, every timed run sees the
same compiled kernel (simulate, sampled simulation, launch), it can be turned off, per-line results still
name the kernel's own lines, the CLI shows it, and the H200 microbenchmark figure it is for."""

import json

import numpy as np
import pytest

import gpusim
from gpusim.analysis.validate import measure, references
from gpusim.cli.main import main
from gpusim.config import load_config
from gpusim.isa import assemble, read_ptx
from gpusim.isa.ptxas import ptxas
from gpusim.workloads import list_workloads, load_workload

H200 = load_config("h200")


@pytest.mark.parametrize("name", list_workloads())
def test_every_workload_keeps_its_values_at_its_test_sizes(name):
    wl = load_workload(name)
    compiled = wl.for_config(H200)
    assert compiled.written_program is wl.program
    for size in wl.test_sizes:
        run = compiled.run(size, H200)
        assert run.ok, f"{name} {size}: {run.message()}"


def test_for_config_compiles_once_per_config_and_can_be_turned_off():
    wl = load_workload("matmul_naive")
    a = wl.for_config(H200)
    assert a.program != wl.program and a.for_config(H200) is a
    assert a.program.regs_per_thread > wl.program.regs_per_thread  # renamed copies hold more values
    b = a.for_config(load_config("gtx980"))
    assert b.written_program is wl.program and b.program == ptxas(wl.program, load_config("gtx980"))
    off = a.for_config(H200, ptxas_model=False)
    assert off.program is wl.program and not off.ptxas_model and off.for_config(H200) is off
    # a CPU config runs the kernel as written (ptxas compiles for NVIDIA GPUs)
    assert ptxas(wl.program, load_config("cpu_8core")) is wl.program


def test_simulate_runs_the_compiled_kernel_and_program_order_on_request():
    on = gpusim.simulate("matmul_naive", "h200", params={"n": 64})
    off = gpusim.simulate("matmul_naive", "h200", params={"n": 64}, ptxas_model=False)
    assert on.verified and off.verified
    wl = load_workload("matmul_naive")
    compiled = wl.for_config(H200).program
    assert on.run.result.program == compiled
    # each of the 128 warps: program order, 27 instructions around 64 iterations of the loop's 8; compiled,
    # what stands before the loop's head, 16 trips of its four copies with their check and test (n = 64
    # leaves no single iteration), the branch out and what follows the loop
    assert off.kernel["warp_instructions"] == 128 * (27 + 64 * 8)
    labels = dict(compiled.labels)
    head, one, out = labels["$ptxas_head_1"], labels["$ptxas_one_1"], labels["$ptxas_exit_1"]
    trip = one - 1 - head
    assert on.kernel["warp_instructions"] == 128 * (head + 16 * trip + 1 + len(compiled) - out)
    assert on.cycles < off.cycles / 2  # the loads of four iterations in flight at once


def test_per_line_results_name_the_kernel_s_own_lines():
    r = gpusim.simulate("matmul_naive", "h200", params={"n": 32}, per_pc=True)
    wl = load_workload("matmul_naive")
    src = wl.folder.joinpath("matmul_naive.sasm").read_text().split("\n")
    lines = {row["line"]: row for row in r.source}
    load_a = next(i.line for i in wl.program.instructions if i.opcode == "ld" and i.space == "global")
    assert src[load_a - 1].strip().startswith("ld.global.f32 %f1")
    # the line's warp instructions: every iteration's load of A, whichever copy of the unrolled loop ran it
    assert lines[load_a]["warp_instructions"] == 32 * 32  # 32 warps, 32 iterations each
    executed = {ln for ln, row in lines.items() if row["warp_instructions"]}
    assert executed <= {i.line for i in wl.program.instructions}  # no line of the compiled form's own


def test_launch_and_sampled_simulation_run_the_compiled_kernel():
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
    c = np.zeros_like(a)
    prog = load_workload("matmul_naive").program
    on = gpusim.launch(prog, (4, 4), (16, 16), [a, a, c, 64], config="h200")
    np.testing.assert_allclose(c, a @ a, rtol=1e-5)
    off = gpusim.launch(prog, (4, 4), (16, 16), [a, a, c, 64], config="h200", ptxas_model=False)
    assert on.cycles < off.cycles
    from gpusim.analysis.sampling import simulate_sampled

    s = simulate_sampled("matmul_naive", "h200", sample="off", n=64)
    assert s.cycles == gpusim.simulate("matmul_naive", "h200", params={"n": 64}).cycles


def test_nounroll_in_ptx_leaves_the_loop_alone():
    ptx = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    mov.u32 %r2, 0;
$L__BB0_1:
    PRAGMA
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra $L__BB0_1;
    st.global.u32 [%rd1], %r2;
    ret;
}
"""
    marked = ptxas(read_ptx(ptx.replace("PRAGMA", '.pragma "nounroll";')), H200)
    unmarked = ptxas(read_ptx(ptx.replace("PRAGMA", "")), H200)
    assert not any(n.startswith("$ptxas_head") for n, _ in marked.labels)
    assert any(n.startswith("$ptxas_head") for n, _ in unmarked.labels)


def test_run_program_order_and_asm_ptxas(capsys):
    assert main(["run", "matmul_naive", "-c", "h200", "--set", "n=32", "--json", "-"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert main(["run", "matmul_naive", "-c", "h200", "--set", "n=32", "--program-order", "--json", "-"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert on["verified"] and off["verified"] and on["kernel"]["cycles"] < off["kernel"]["cycles"]
    assert main(["run", "matmul_naive", "--functional", "--program-order"]) == 2
    assert "--program-order needs the timing model" in capsys.readouterr().err
    assert main(["asm", "matmul_naive", "--ptxas", "-c", "h200", "--plain"]) == 0
    text = capsys.readouterr().out
    assert "$ptxas_head_1:" in text and assemble(text) == ptxas(load_workload("matmul_naive").program, H200)
    assert main(["asm", "matmul_naive"]) == 0
    assert "$ptxas" not in capsys.readouterr().out


def test_h200_add_throughput_counts_two_adds_per_iadd3():
    fig = next(f for f, *_ in references("h200", ["iadd_throughput"]))
    assert "known_gap" not in fig["h200"]
    sim = measure("h200", fig["measure"])
    assert sim == pytest.approx(126, rel=0.15)  # measured: 126 add.u32 per clock per SM (63 IADD3)
    # as written, one add an instruction: 64 INT lanes per SM, less the loop's own instructions
    assert measure("h200", fig["measure"], ptxas_model=False) < 64
    # the published A100 figure is the native rate (64 INT32 lanes), measured in program order by validate
    assert measure("a100", fig["measure"], ptxas_model=False) == pytest.approx(64, rel=0.15)

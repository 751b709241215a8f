"""PTX reader: nvcc's output for the shipped CUDA ports, the constructs it maps, located errors for what
it does not take, and fuzzing of nvcc's output (only gpusim's own errors may come out)."""

import random
import re
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.data import data_dir
from gpusim.errors import AssemblyError, GpusimError
from gpusim.isa import read_ptx, read_ptx_file
from gpusim.isa.ptx import demangle, ptx_entries, with_dynamic_shared

PORTS = ("vecadd", "saxpy", "reduce_sum", "reduce_sum_shfl", "matmul_tiled", "transpose_shared", "histogram",
         "softmax")


def port_ptx(name: str) -> Path:
    return data_dir("workloads") / f"{name}_cu" / f"{name}.ptx"


def ptx_lines(path: Path) -> list[str]:
    return path.read_text().split("\n")


@pytest.mark.parametrize("name", PORTS)
def test_ports_read_one_instruction_per_ptx_instruction(name):
    path = port_ptx(name)
    prog = read_ptx_file(path)
    assert prog.name == name
    lines = ptx_lines(path)
    # every PTX instruction line (not a label, directive, brace or comment) is one gpusim instruction
    instr_lines = [i + 1 for i, ln in enumerate(lines)
                   if ln.strip() and not ln.strip().startswith(("//", ".", "{", "}", "$", ")"))
                   and ln.startswith("\t") and not ln.strip().endswith(":") and not ln.strip().startswith(".b8")]
    assert [ins.line for ins in prog.instructions] == instr_lines
    for ins in prog.instructions:  # line and text point at the PTX; loc at the CUDA source
        assert " ".join(lines[ins.line - 1].split()).rstrip(";") == ins.text
        # (`.loc 1 0 5`: code of no source line)
        locs = [ln for ln in lines[: ins.line] if ln.strip().startswith(".loc")]
        if locs and locs[-1].split()[2] == "0":
            assert ins.loc is None
        else:
            assert ins.loc[0].endswith(f"{name}.cu") and Path(ins.loc[0]).is_file()


def test_vecadd_mapping_and_locations():
    prog = read_ptx_file(port_ptx("vecadd"))
    ops = [ins.mnemonic for ins in prog.instructions]
    assert ops[:4] == ["ld.param.u64"] * 3 + ["ld.param.u32"]
    assert "cvta.to.global.u64" in ops and ops[-1] == "exit"  # ret -> exit
    assert [p.type for p in prog.params] == ["u64", "u64", "u64", "u32"]
    add = next(i for i in prog.instructions if i.mnemonic == "add.f32")
    # `c[i] = a[i] + b[i]` is line 6 of vecadd.cu
    assert add.loc[1] == 6 and add.unit == gpusim.isa.Unit.FP32


def test_inlined_code_is_charged_to_the_call_site():
    prog = read_ptx_file(port_ptx("histogram"))
    atoms = [i for i in prog.instructions if i.opcode == "atom"]
    # atomicAdd is inlined from device_atomic_functions.hpp; .loc's inlined_at names histogram.cu's lines
    assert [(Path(a.loc[0]).name, a.loc[1]) for a in atoms] == [("histogram.cu", 11), ("histogram.cu", 16)]


def test_demangle():
    assert demangle("_Z6vecaddPKfS0_Pfj") == "vecadd"
    assert demangle("_ZN2ns4axpyEPf") == "ns::axpy"
    assert demangle("plain_c_kernel") == "plain_c_kernel"
    assert demangle("_Z") == "_Z"


TWO = """.version 9.0
.target sm_80
.address_size 64

.visible .entry _Z3onePf(
\t.param .u64 _Z3onePf_param_0
)
{
\t.reg .b32 %r<2>;
\tmov.u32 %r1, 1;
\tret;
}

.visible .entry two(
\t.param .u32 two_param_0
)
{
\t.reg .b32 %r<2>;
\tld.param.u32 %r1, [two_param_0];
\tret;
}
"""


def test_entries_and_choice():
    assert [(e.mangled, e.name) for e in ptx_entries(TWO)] == [("_Z3onePf", "one"), ("two", "two")]
    assert read_ptx(TWO, "m.ptx", "one").params[0].name == "_Z3onePf_param_0"
    assert read_ptx(TWO, "m.ptx", "_Z3onePf").name == "one"
    assert read_ptx(TWO, "m.ptx", "one(float*)").name == "one"
    assert len(read_ptx(TWO, "m.ptx", "two")) == 2
    with pytest.raises(AssemblyError) as e:
        read_ptx(TWO, "m.ptx")
    assert str(e.value) == ("m.ptx:14:1: the PTX has 2 kernels (one (_Z3onePf), two); name one (entry: / "
                            "kernel_name=)")
    with pytest.raises(AssemblyError, match="no kernel is named 'three'"):
        read_ptx(TWO, "m.ptx", "three")


def kernel(body: str, regs: str = "") -> str:
    return (".version 8.5\n.target sm_75\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
            "\t.reg .pred %p<4>;\n\t.reg .b16 %rs<4>;\n\t.reg .b32 %r<16>;\n\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<8>;\n"
            + regs + body + "\tret;\n}\n")


def error_of(text: str) -> str:
    with pytest.raises(AssemblyError) as e:
        read_ptx(text, "k.ptx")
    return str(e.value)


def test_unsupported_instruction_is_located():
    # line 14, the instruction at column 2 (after a tab)
    assert error_of(kernel("\tmov.u32 %r1, 5;\n\tbrev.b32 %r2, %r1;\n")) == (
        "k.ptx:14:2: unsupported PTX instruction 'brev.b32'")
    assert error_of(kernel("\t@%p1 prmt.b32 %r2, %r1, %r1, 0;\n")) == (
        "k.ptx:13:7: unsupported PTX instruction 'prmt.b32'")


@pytest.mark.parametrize("line, what", [
    ("\tld.global.v8.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f0}, [%rd1];\n", "instruction 'ld.global.v8.f32'"),
    ("\tprmt.b32 %r1, %r2, %r3, 0x5410;\n", "instruction 'prmt.b32'"),  # (mov.b64 {%r1, %r2}: now read)
    ("\tld.local.u32 %r1, [%rd1];\n", "local-memory access 'ld.local.u32 %r1, [%rd1]'"),
    ("\tcvta.to.local.u64 %rd1, %rd2;\n", "instruction 'cvta.to.local.u64'"),
    ("\tcall.uni f, (%r1);\n", "instruction 'call.uni'"),
    ("\tmul.rna.f32 %f1, %f2, %f3;\n", "instruction 'mul.rna.f32'"),  # (.rz/.rm/.rp: read since issue 40)
    ("\t.local .pred %q;\n", "local array type '.pred'"),
])
def test_unsupported_constructs(line, what):
    assert error_of(kernel(line)).startswith(f"k.ptx:13:2: unsupported PTX {what}")


def test_unsupported_module_directive():
    text = kernel("").replace(".address_size 64\n", ".address_size 64\n.tex .u64 t;\n")
    assert error_of(text) == "k.ptx:4:1: unsupported PTX directive '.tex'"
    # a `.global` variable is a declaration (Numba declares one it never reads); a use of one is the error
    text = kernel("\tld.global.u32 %r1, [g];\n").replace(".address_size 64\n", ".address_size 64\n.global .u32 g;\n")
    assert error_of(text) == "k.ptx:14:22: unsupported PTX use of a module-scope .global variable 'g'"


def test_ordinary_errors_are_located():
    assert error_of(kernel("\tadd.s32 %r1, %r99, 1;\n")) == "k.ptx:13:15: undefined register (at '%r99')"
    assert error_of("garbage") == "garbage:1:1: no kernel: the PTX has no .entry".replace("garbage:", "k.ptx:")


def run(text: str, n: int = 32, out_dtype=np.uint32, block: int = 32, **kw) -> np.ndarray:
    out = np.zeros(n, dtype=out_dtype)
    gpusim.launch(text, 1, block, [out], mode="functional", **kw)
    return out


# out[tid] = f(tid): the ISA additions the PTX front end needs, checked value by value
STORE = "\tmov.u32 %r1, %tid.x;\n\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n" \
        "\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n"


def test_shfl_sync_clamp_and_predicate():
    # __shfl_down_sync(FULL, v, 2, 8): segments of 8 lanes (c = ((32 - 8) << 8) | 31 = 0x181f)
    body = STORE + ("\tshfl.sync.down.b32 %r2|%p1, %r1, 2, 6175, -1;\n\tselp.u32 %r3, 1000, 0, %p1;\n"
                    "\tadd.s32 %r4, %r2, %r3;\n\tst.global.u32 [%rd4], %r4;\n")
    lane = np.arange(32)
    valid = (lane % 8) + 2 <= 7
    assert np.array_equal(run(kernel(body)), np.where(valid, lane + 2 + 1000, lane))


def test_setp_with_bool_op_vote_and_fence():
    body = STORE + ("\tsetp.lt.u32 %p1, %r1, 20;\n\tsetp.gt.and.u32 %p2, %r1, 10, %p1;\n"
                    "\tvote.sync.ballot.b32 %r5, %p2, -1;\n\tmembar.gl;\n\tfence.sc.gpu;\n"
                    "\tselp.u32 %r6, 1, 0, %p2;\n\tadd.s32 %r7, %r5, %r6;\n\tst.global.u32 [%rd4], %r7;\n")
    lane = np.arange(32)
    ballot = sum(1 << i for i in range(11, 20))
    assert np.array_equal(run(kernel(body)), ballot + ((lane > 10) & (lane < 20)))


def test_atom_inc_dec_and_16_bit_arithmetic():
    # every lane increments out[0] modulo 5 (wraps to 0 past 4) and decrements out[1] (wraps to 9 at 0);
    # lane i also stores (u16)(i * 3) widened with mul.wide.u16 into out[2 + i]
    body = STORE + ("\tatom.global.inc.u32 %r2, [%rd2], 4;\n\tatom.relaxed.gpu.global.dec.u32 %r3, [%rd2+4], 9;\n"
                    "\tcvt.u16.u32 %rs1, %r1;\n\tmul.wide.u16 %r4, %rs1, 3;\n\tadd.s64 %rd5, %rd4, 8;\n"
                    "\tst.global.u32 [%rd5], %r4;\n")
    out = run(kernel(body), n=40)
    assert out[0] == 32 % 5 and out[1] == (0 - 32) % 10
    assert np.array_equal(out[2:34], np.arange(32) * 3)


def test_vector_loads_and_stores_are_one_instruction():
    # lane i: {a, b, c, d} = out[4i .. 4i+3] (one .v4 load), through shared memory as two .v2 pairs, then
    # stored reversed at out[128 + 4i ..] (one .v4 store)
    body = STORE + ("\tmul.wide.u32 %rd5, %r1, 16;\n\tadd.s64 %rd6, %rd2, %rd5;\n"
                    "\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd6];\n"
                    "\tmov.u32 %r2, buf;\n\tshl.b32 %r3, %r1, 4;\n\tadd.s32 %r4, %r2, %r3;\n"
                    "\tst.shared.v2.f32 [%r4], {%f1, %f2};\n\tst.shared.v2.f32 [%r4+8], {%f3, %f4};\n"
                    "\tld.shared.v2.f32 {%f5, %f6}, [%r4+8];\n"
                    "\tst.global.v4.f32 [%rd6+512], {%f6, %f5, %f2, %f1};\n")
    text = kernel(body, regs="\t.shared .align 16 .b8 buf[512];\n")
    prog = read_ptx(text, "k.ptx")
    vec = [i for i in prog.instructions if i.vector > 1]
    assert [(i.mnemonic, len(i.dsts), len(i.srcs)) for i in vec] == [
        ("ld.global.v4.f32", 4, 1), ("st.shared.v2.f32", 1, 2), ("st.shared.v2.f32", 1, 2),
        ("ld.shared.v2.f32", 2, 1), ("st.global.v4.f32", 1, 4)]
    assert gpusim.assemble(gpusim.disassemble(prog)).instructions == prog.instructions
    out = np.arange(256, dtype=np.float32)
    run_ = gpusim.launch(text, 1, 32, [out], mode="functional")
    assert np.array_equal(out[128:].reshape(32, 4), np.arange(128, dtype=np.float32).reshape(32, 4)[:, ::-1])
    stats = run_.result.stats
    assert stats.warp_instructions == len(prog)  # one warp, no branches: each instruction once
    # misaligned: a .v4 access needs 16-byte alignment
    with pytest.raises(gpusim.KernelFault, match="misaligned 16-byte global access"):
        gpusim.launch(text.replace("[%rd6];", "[%rd6+4];"), 1, 32, [out], mode="functional")


def test_negative_offsets_and_dynamic_shared():
    text = kernel(STORE + ("\tmov.u32 %r2, smem;\n\tshl.b32 %r3, %r1, 2;\n\tadd.s32 %r4, %r2, %r3;\n"
                           "\tst.shared.u32 [%r4+8], %r1;\n\tbar.sync 0;\n\tadd.s32 %r6, %r4, 8;\n"
                           "\tld.shared.u32 %r5, [%r6+-4];\n"
                           "\tst.global.u32 [%rd4], %r5;\n"))
    text = text.replace(".visible .entry", ".extern .shared .align 16 .b8 smem[];\n\n.visible .entry")
    prog = read_ptx(text, "k.ptx")
    assert prog.shared_bytes == 0 and prog.shared[-1].dynamic
    assert with_dynamic_shared(prog, 256).shared_bytes == 256
    out = run(text, n=32, shared_bytes=34 * 4)
    # lane i stores i at smem[i + 2] and reads smem[i + 1] ([(&smem[i] + 8) - 4]): lane i - 1's value
    assert out[0] == 0 and np.array_equal(out[1:], np.arange(31))


def test_dynamic_shared_without_extern_is_a_launch_error():
    with pytest.raises(gpusim.LaunchError, match="dynamic shared memory for a kernel without an .extern"):
        run(kernel(""), shared_bytes=64)


# ---- fuzzing -----------------------------------------------------------------------------------------

def _mutants(text: str, seed: int, count: int):
    rng = random.Random(seed)
    lines = text.split("\n")
    for _ in range(count):
        ls = list(lines)
        kind = rng.randrange(7)
        i = rng.randrange(len(ls))
        if kind == 0:
            del ls[i]
        elif kind == 1:
            ls.insert(i, ls[rng.randrange(len(ls))])
        elif kind == 2:
            j = rng.randrange(len(ls))
            ls[i], ls[j] = ls[j], ls[i]
        elif kind == 3:  # truncate the file
            ls = ls[:i]
        else:  # token-level: delete, duplicate or swap a token of a line, or cut the line short
            toks = re.split(r"(\s+|[,;\[\]{}()|+])", ls[i])
            if toks:
                k = rng.randrange(len(toks))
                if kind == 4:
                    del toks[k]
                elif kind == 5:
                    toks.insert(k, toks[rng.randrange(len(toks))])
                else:
                    m = rng.randrange(len(toks))
                    toks[k], toks[m] = toks[m], toks[k]
                ls[i] = "".join(toks)
                if rng.random() < 0.2:
                    ls[i] = ls[i][: rng.randrange(len(ls[i]) + 1)]
        yield "\n".join(ls)


@pytest.mark.parametrize("name", ["vecadd", "reduce_sum_shfl", "histogram", "softmax"])
def test_fuzzed_nvcc_output_gives_only_gpusim_errors(name):
    text = port_ptx(name).read_text()
    outcomes = {"ok": 0, "error": 0}
    for k, mutant in enumerate(_mutants(text, seed=21 + len(name), count=100)):
        try:
            read_ptx(mutant, f"{name}.ptx")
            outcomes["ok"] += 1
        except GpusimError as exc:
            msg = str(exc)
            assert "\n" not in msg and msg.startswith(f"{name}.ptx:"), (k, msg)
            outcomes["error"] += 1
    assert outcomes["error"] > 20  # the mutations do break things, and each break is reported

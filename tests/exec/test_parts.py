"""gpusim exec's parts: the wire against the C runtime, device memory's layout, the device as the config has
it, module variables, the timeline's ordering rules, and each kind of bad input as one line."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import checked_in

from gpusim.config import load_config
from gpusim.exec import device
from gpusim.exec import protocol as P
from gpusim.exec.memory import ALIGN, PAGE, DeviceMemory
from gpusim.exec.modules import param_sizes, place_variables, variables
from gpusim.exec.shim import source_dir
from gpusim.exec.timeline import Timeline

CFG = load_config("a100")
C_SOURCE = (source_dir() / "cudart.c").read_text()


def test_the_operation_numbers_agree_with_the_c_runtime():
    enum = dict(re.findall(r"OP_(\w+) = (\d+)", C_SOURCE))
    assert {k: int(v) for k, v in enum.items()} == P.OPS


def test_every_error_gpusim_returns_has_the_c_runtimes_name():
    table = {int(code): name for code, name in re.findall(r'\{(\d+), "(cuda\w+)"', C_SOURCE)}
    for code, name in P.ERROR_NAMES.items():
        assert table.get(code) == name, code


def test_device_memory_is_laid_out_as_the_driver_does():
    mem = DeviceMemory(64 << 20)
    a = mem.alloc(1000)
    b = mem.alloc(1000)
    big = mem.alloc(PAGE + 1)
    assert a == mem.base and b == a + 1024 and b % ALIGN == 0  # small ones side by side in one 2 MiB page
    assert big == a + 2 * PAGE  # a page of its own kind, one unmapped page between reservations
    # within a mapped page a read past an allocation reads what is there; past the pages it faults
    assert mem.valid(np.array([a + 1000, a + PAGE - 4]), 4).all()
    assert not mem.valid(np.array([a + PAGE]), 4).any()
    assert mem.valid(np.array([big + 2 * PAGE - 4]), 4).all() and not mem.valid(np.array([big + 2 * PAGE]), 4).any()
    mem.write(b, np.arange(4, dtype=np.int32))
    assert mem.read(b + 4, np.int32, 2).tolist() == [1, 2]
    mem.release(a, (P.DEVICE,))
    with pytest.raises(P.Reply) as freed:
        mem.release(a, (P.DEVICE,))
    assert freed.value.status == P.INVALID_VALUE and "freed already" in freed.value.why
    mem.release(b, (P.DEVICE,))
    assert not mem.valid(np.array([a]), 4).any()  # the page held nothing any more: unmapped
    with pytest.raises(P.Reply) as full:
        mem.alloc(64 << 20)
    assert full.value.status == P.MEMORY_ALLOCATION
    mem.close()


def test_device_properties_come_from_the_config():
    raw = device.properties_bytes(CFG)
    assert len(raw) == device.PROP_BYTES
    assert raw[:10] == b"gpusim a10"
    off = device.PROP_FIELDS
    assert int.from_bytes(raw[off["multiProcessorCount"][0]:][:4], "little") == CFG.chip.sm_count
    assert int.from_bytes(raw[off["totalGlobalMem"][0]:][:8], "little") == CFG.chip.global_memory_bytes
    assert device.attribute(CFG, 75) == 8 and device.attribute(CFG, 76) == 0  # compute capability 8.0
    assert device.attribute(CFG, 5) == 2**31 - 1 and device.attribute(CFG, 6) == 65535  # max grid
    assert device.attribute(CFG, 13) == 1_410_000  # clock, kHz
    assert device.attribute(CFG, 9999) is None


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc's headers give the struct offsets to compare with")
def test_the_struct_offsets_are_cuda_13s(tmp_path):
    checks = [f'printf("%zu %zu\\n", offsetof(struct cudaDeviceProp, {f}), (size_t){o});'
              for f, (o, _) in device.PROP_FIELDS.items()]
    checks += [f'printf("%zu %zu\\n", offsetof(struct cudaFuncAttributes, {f}), (size_t){o});'
               for f, (o, _) in device.FUNC_FIELDS.items()]
    checks += [f'printf("%zu %zu\\n", sizeof(struct cudaDeviceProp), (size_t){device.PROP_BYTES});',
               f'printf("%zu %zu\\n", sizeof(struct cudaFuncAttributes), (size_t){device.FUNC_ATTR_BYTES});']
    src = tmp_path / "off.cu"
    src.write_text("#include <cstdio>\n#include <cstddef>\n#include <cuda_runtime_api.h>\nint main() {\n"
                   + "\n".join(checks) + "\nreturn 0; }\n")
    subprocess.run(["nvcc", "-o", str(tmp_path / "off"), str(src)], check=True, capture_output=True, timeout=600)
    out = subprocess.run([str(tmp_path / "off")], capture_output=True, text=True).stdout.split("\n")
    pairs = [line.split() for line in out if line]
    assert all(a == b for a, b in pairs) and len(pairs) == len(checks)


PTX = """
.version 8.8
.target sm_80
.address_size 64
.global .align 4 .u32 counter;
.global .align 4 .b8 table[16] = {0, 0, 192, 63, 0, 0, 32, 64, 0, 0, 96, 64, 0, 0, 144, 64};
.const .align 4 .f32 scale[2] = {0f40000000, 0f3F800000};
.visible .entry _Z1kPfi(
    .param .u64 _Z1kPfi_param_0,
    .param .u32 _Z1kPfi_param_1,
    .param .align 8 .b8 _Z1kPfi_param_2[24]
)
{
    ld.const.f32 %f1, [scale+4];
    mov.u64 %rd1, table;
    cvta.const.u64 %rd2, scale;
    atom.global.add.u32 %r1, [counter], 1;
}
"""


def test_module_variables_are_read_and_placed_at_their_addresses():
    vs = variables(PTX)
    assert set(vs) == {"counter", "table", "scale"}
    assert vs["counter"].size == 4 and vs["counter"].init is None
    assert np.frombuffer(vs["table"].init, np.float32).tolist() == [1.5, 2.5, 3.5, 4.5]
    assert np.frombuffer(vs["scale"].init, np.float32).tolist() == [2.0, 1.0]
    assert param_sizes(PTX) == {"_Z1kPfi": [8, 4, 24]}
    placed = place_variables(PTX, {"counter": 0x1000, "table": 0x2000, "scale": 0x3000})
    assert "ld.global.f32 %f1, [12288+4];" in placed
    assert "mov.u64 %rd1, 8192;" in placed and "cvta.global.u64 %rd2, 12288;" in placed
    assert "[4096], 1;" in placed and ".global .align 4 .u32 counter" not in placed
    assert placed.count("\n") == PTX.count("\n")  # line numbers kept for errors


def test_the_legacy_stream_and_host_waits_become_event_waits():
    t = Timeline(CFG)
    t.stream("a")
    t.stream("b", blocking=False)
    t.kernel("a", 1410, "ka")  # 1 us
    t.kernel("b", 1410, "kb")
    t.kernel("s0", 1410, "k0")  # waits for a (blocking), not for b
    t.kernel("a", 1410, "ka2")  # waits for k0
    rep = t.report()
    end = {r.name: r.end for r in rep.records if r.kind == "kernel"}
    start = {r.name: r.start for r in rep.records if r.kind == "kernel"}
    assert start["k0"] >= end["ka"] and start["ka2"] >= end["k0"]
    # a host-blocking wait on stream b: everything issued after it starts after b's work
    t.host_waits(["b"])
    t.kernel("a", 1410, "after")
    rep = t.report()
    after = next(r for r in rep.records if r.name == "after")
    assert after.start >= max(r.end for r in rep.records if r.name == "kb")


def test_dram_time_of_device_copies():
    t = Timeline(CFG)
    d = CFG.dram
    assert t.dram_cycles(10**9) == pytest.approx(1e9 / (d.bandwidth_gbps * 1e9 * d.efficiency) * 1410e6)


def _gpusim(*argv, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "gpusim", "exec", *map(str, argv)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=cwd)


def test_a_program_that_is_not_cuda_runs_with_one_line(tmp_path):
    script = tmp_path / "hello.sh"
    script.write_text("#!/bin/sh\necho hello from the script\nexit 4\n")
    script.chmod(0o755)
    done = _gpusim("--", script)
    assert done.stdout == "hello from the script\n" and done.returncode == 4
    assert f"gpusim: {script}: a script; gpusim exec runs programs built by nvcc" in done.stderr
    assert "Traceback" not in done.stderr
    true = shutil.which("true")
    done = _gpusim("--", true)
    assert f"gpusim: {true}: not a CUDA program (it does not link the CUDA runtime, libcudart.so)" in done.stderr
    assert done.returncode == 0 and "Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc builds the statically linked program")
def test_a_program_with_the_static_runtime_is_one_line(tmp_path):
    src = Path(__file__).parent / "programs" / "vecadd.cu"
    subprocess.run(["nvcc", "-arch=sm_80", "-o", str(tmp_path / "static"), str(src)], check=True, timeout=600,
                   capture_output=True)
    done = _gpusim("--", tmp_path / "static")
    line = (f"gpusim: {tmp_path / 'static'}: built with the static CUDA runtime (nvcc's default), which gpusim "
            "cannot stand in for; rebuild it with `nvcc -cudart shared`")
    assert line in done.stderr.splitlines() and "Traceback" not in done.stderr
    assert "vecadd n=1000:" in done.stdout  # the program's own output (its CUDA calls fail without a GPU)


def test_no_program_no_file_no_compiler_are_one_line_each(tmp_path):
    for argv, said in [((), "no program to run"), (("--", tmp_path / "nope"), "no such file"),
                       (("--", "no-such-command-here"), "no such program")]:
        done = _gpusim(*argv)
        assert done.returncode == 2 and said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    import os

    env = dict(os.environ, CC="/no/such/cc", GPUSIM_CACHE_DIR=str(tmp_path / "cache"))
    done = _gpusim("--", checked_in("vecadd"), env=env)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "needs a C compiler: none of $CC, cc, gcc, clang is on PATH" in done.stderr

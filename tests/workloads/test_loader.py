"""The workload folder format: parameters, launch expressions, search path, and the errors a malformed
folder gives (each naming the file, the field and the offending text)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from gpusim.data import data_dir
from gpusim.errors import AssemblyError, WorkloadError
from gpusim.workloads import list_workloads, load_workload
from gpusim.workloads.expr import ExprError, evaluate

REPO = Path(__file__).resolve().parents[2]

KERNEL = """\
.kernel copy
.param .u64 src
.param .u64 dst
.param .u32 n
.reg .u32 %r<3>
.reg .u64 %rd<4>
.reg .f32 %f
.reg .pred %p
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.lo.u32 %r2, %r0, %r1, %tid.x;
    ld.param.u32 %r0, [n];
    setp.ge.u32 %p, %r2, %r0;
    @%p exit;
    mul.wide.u32 %rd0, %r2, 4;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    add.u64 %rd1, %rd1, %rd0;
    add.u64 %rd2, %rd2, %rd0;
    ld.global.f32 %f, [%rd1];
    st.global.f32 [%rd2], %f;
"""

REFERENCE = """\
import numpy as np

def inputs(p, rng):
    return {"src": rng.standard_normal(p["n"], dtype=np.float32),
            "dst": np.zeros(p["n"], dtype=np.float32), "n": p["n"]}

def reference(p, inputs):
    return {"dst": inputs["src"]}
"""

YAML = """\
name: copy
description: a test copy
kernel: copy.sasm
params: {n: 100, block: 32}
launch: {grid: "ceil_div(n, block)", block: "block"}
test_sizes: [{n: 10}, {n: 33}]
"""


def make(tmp_path: Path, *, yaml: str = YAML, kernel: str | None = KERNEL, reference: str = REFERENCE,
         name: str = "copy") -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    (folder / "workload.yaml").write_text(textwrap.dedent(yaml))
    if kernel is not None:
        (folder / "copy.sasm").write_text(kernel)
    (folder / "reference.py").write_text(reference)
    return folder


# ---- loading and parameters -------------------------------------------------------------------

def test_load_by_path_and_run(tmp_path):
    wl = load_workload(make(tmp_path))
    assert wl.name == "copy" and wl.program.name == "copy"
    assert wl.defaults == {"n": 100, "block": 32}
    assert wl.test_sizes == ({"n": 10, "block": 32}, {"n": 33, "block": 32})
    run = wl.run()
    assert run.ok and run.outputs["dst"].shape == (100,)
    assert load_workload(make(tmp_path / "b") / "workload.yaml").name == "copy"


def test_params_merge_and_coerce():
    wl = load_workload("saxpy")
    assert wl.params() == {"n": 1048576, "block": 256}
    assert wl.params({"n": "4096", "block": 128.0}) == {"n": 4096, "block": 128}
    launch = wl.launch({"n": 1000})
    assert launch.grid == (4, 1, 1) and launch.block == (256, 1, 1)


def test_two_dimensional_launch():
    wl = load_workload("matmul_naive")
    launch = wl.launch({"n": 37})
    assert launch.grid == (3, 3, 1) and launch.block == (16, 16, 1)


def test_unknown_parameter_names_it_and_lists_known():
    wl = load_workload("saxpy")
    with pytest.raises(WorkloadError, match=r"unknown parameter 'm'; known parameters: block, n"):
        wl.params({"m": 5})
    with pytest.raises(WorkloadError, match="unknown parameter 'size'"):
        wl.run({"size": 5})


def test_non_integer_for_integer_parameter():
    with pytest.raises(WorkloadError, match="parameter n must be an integer"):
        load_workload("saxpy").params({"n": 10.5})
    with pytest.raises(WorkloadError, match="n='ten' is not a number"):
        load_workload("saxpy").params({"n": "ten"})


def test_unknown_workload_lists_known():
    with pytest.raises(WorkloadError, match=r"unknown workload 'nope'; known workloads: .*saxpy"):
        load_workload("nope")


def test_micro_benchmarks_load_by_bare_name():
    assert "stream_copy" in list_workloads()
    assert load_workload("stream_copy").folder == data_dir("workloads") / "micro" / "stream_copy"


def test_search_path(tmp_path, monkeypatch):
    make(tmp_path / "mine")
    monkeypatch.setenv("GPUSIM_WORKLOAD_PATH", str(tmp_path / "mine"))
    assert "copy" in list_workloads()
    assert load_workload("copy").run({"n": 50}).ok


# ---- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("grid", "message"), [
    ("ceil_div(n, blok)",
     r"launch\.grid: 'ceil_div\(n, blok\)': unknown name 'blok' \(parameters: block, n\)"),
    ("__import__('os')", r"launch\.grid: .*unknown function '__import__'"),
    ("n.real", r"launch\.grid: 'n\.real': 'n\.real' is not allowed"),
    ("n / 0", r"launch\.grid: 'n / 0': division by zero"),
    ("n +", r"launch\.grid: 'n \+': syntax error"),
    ("n / 3", r"launch\.grid: 'n / 3' gives 33\.3.*not an integer"),
])
def test_bad_launch_expression(tmp_path, grid, message):
    folder = make(tmp_path, yaml=YAML.replace('"ceil_div(n, block)"', f'"{grid}"'))
    with pytest.raises(WorkloadError, match=message) as e:
        load_workload(folder)
    assert str(folder / "workload.yaml") in str(e.value)


def test_bad_launch_only_at_a_test_size(tmp_path):
    folder = make(tmp_path, yaml=YAML.replace('"ceil_div(n, block)"', '"ceil_div(n - 10, block)"'))
    message = r"workload.yaml:6: test_sizes\[0\]: launch.grid: 'ceil_div\(n - 10, block\)' gives 0; every"
    with pytest.raises(WorkloadError, match=message):
        load_workload(folder)


def test_missing_kernel_file(tmp_path):
    folder = make(tmp_path, kernel=None)
    with pytest.raises(WorkloadError, match=r"workload.yaml:3: kernel: kernel file 'copy.sasm' not found"):
        load_workload(folder)


def test_kernel_that_does_not_assemble(tmp_path):
    folder = make(tmp_path, kernel=KERNEL.replace("mad.lo.u32", "madd.lo.u32"))
    with pytest.raises(AssemblyError, match=r"copy.sasm:11:\d+: unknown opcode"):
        load_workload(folder)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda y: y.replace("test_sizes: [{n: 10}, {n: 33}]", "test_sizes: [{n: 10}, {size: 33}]"),
     r"test_sizes\[1\]: workload 'copy': unknown parameter 'size'; known parameters: block, n"),
    (lambda y: y.replace("{n: 100, block: 32}", "{n: big, block: 32}"),
     r"params\.n: default must be a number"),
    (lambda y: y + "colour: red\n", r"colour: unknown field"),
    (lambda y: y.replace("name: copy", "name: paste"), r"name: 'paste' must match the folder name 'copy'"),
    (lambda y: y.replace("test_sizes: [{n: 10}, {n: 33}]\n", ""), r"missing field 'test_sizes'"),
    (lambda y: y.replace('block: "block"}', 'block: [1, 2, 3, 4]}'),
     r"launch\.block: expected an expression or a list of 1-3"),
    (lambda y: y + "tolerance: {rtol: -1}\n", r"tolerance\.rtol: expected a non-negative number"),
    (lambda y: y + "launch: [\n", r"not valid YAML"),
    (lambda y: y + "problem: [n, size]\n", r"problem: 'size' is not a parameter; parameters: n, block"),
    (lambda y: y + "problem: n\n", r"problem: expected a list of parameter names, got 'n'"),
])
def test_malformed_yaml(tmp_path, edit, message):
    with pytest.raises(WorkloadError, match=message):
        load_workload(make(tmp_path, yaml=edit(YAML)))


def test_reference_problems(tmp_path):
    with pytest.raises(WorkloadError, match=r"reference.py: missing function reference"):
        load_workload(make(tmp_path / "a", reference="def inputs(p, rng):\n    return {}\n"))
    with pytest.raises(WorkloadError, match=r"reference.py: cannot import: ZeroDivisionError"):
        load_workload(make(tmp_path / "b", reference="1 / 0\n"))
    wl = load_workload(make(tmp_path / "c", reference=REFERENCE.replace('"n": p["n"]', '"m": 1')))
    with pytest.raises(WorkloadError, match=r"no value for kernel parameter\(s\) n; m not kernel parameter"):
        wl.run()
    short = REFERENCE.replace('inputs["src"]}', 'inputs["src"][:5]}')
    wl = load_workload(make(tmp_path / "d", reference=short))
    with pytest.raises(WorkloadError, match=r"reference\(\)\['dst'\] has shape \(5,\), but the .*\(100,\)"):
        wl.run()
    wl = load_workload(make(tmp_path / "e", reference=REFERENCE.replace('"n": p["n"]', '"n": "x"')))
    with pytest.raises(WorkloadError, match=r"inputs\(\)\['n'\] is str"):
        wl.run()


# ---- verification -----------------------------------------------------------------------------

def test_wrong_reference_fails_verification(tmp_path):
    from gpusim.errors import VerificationError

    # expected differs from what the kernel writes at element 7 and from 40 on
    ref = REFERENCE.replace('return {"dst": inputs["src"]}',
                            'd = inputs["src"].copy()\n    d[7] += 1\n    d[40:] = -5\n    return {"dst": d}')
    wl = load_workload(make(tmp_path, reference=ref))
    run = wl.run({"n": 50})
    assert not run.ok
    m = run.mismatches["dst"]
    assert m["count"] == 11 and m["first_indices"] == [7, 40, 41, 42, 43, 44, 45, 46, 47, 48]
    assert m["got"][0] == pytest.approx(run.outputs["dst"][7]) and m["expected"][1] == -5
    with pytest.raises(VerificationError, match=r"output 'dst' differs from the reference at 11 of 50 "
                                                r"elements; first at index 7") as e:
        run.check()
    assert e.value.mismatches == run.mismatches
    assert run.summary()["verified"] is False


def test_multi_dimensional_mismatch_indices(tmp_path):
    ref = """\
import numpy as np

def inputs(p, rng):
    return {"src": np.arange(p["n"], dtype=np.int32).reshape(-1, 10),
            "dst": np.zeros((p["n"] // 10, 10), dtype=np.int32), "n": p["n"]}

def reference(p, inputs):
    d = inputs["src"].copy()
    d[2, 3] = 0
    return {"dst": d}
"""
    wl = load_workload(make(tmp_path, kernel=KERNEL.replace(".f32", ".s32"), reference=ref))
    run = wl.run({"n": 50})
    assert run.mismatches["dst"]["first_indices"] == [(2, 3)]
    assert run.mismatches["dst"]["expected"] == [0] and run.mismatches["dst"]["got"] == [23]
    with pytest.raises(Exception, match=r"index \(2, 3\): got 23, expected 0"):
        run.check()


def test_tolerance_and_nan(tmp_path):
    ref = REFERENCE.replace('return {"dst": inputs["src"]}',
                            'd = inputs["src"]\n    d[0] = np.nan\n    d[1] *= 1.001\n    return {"dst": d}')
    yaml = YAML + "tolerance: {rtol: 1.0e-2, atol: 0}\n"
    src_nan = make(tmp_path, yaml=yaml, reference=ref)
    run = load_workload(src_nan).run({"n": 10})
    # element 0: kernel copied a number, reference says NaN -> mismatch; element 1 within 1 %
    assert run.mismatches["dst"]["first_indices"] == [0]


# ---- expressions ------------------------------------------------------------------------------

def test_expressions():
    p = {"n": 1000, "block": 256}
    assert evaluate("ceil_div(n, block)", p) == 4
    assert evaluate("n // block + n % block", p) == 3 + 232
    assert evaluate("2 ** 10 - -1", p) == 1025
    assert evaluate("max(1, min(n, block), 3)", p) == 256
    assert evaluate("int(n / 3)", p) == 333
    assert evaluate(64, p) == 64
    bad_ones = ("n if n else 1", "[n]", "'a'", "open('x')", "min(n, key=1)", "ceil_div(n)", "True",
                "2 ** 1000")
    for bad in bad_ones:
        with pytest.raises(ExprError):
            evaluate(bad, p)


def test_docs_table_lists_every_shipped_workload():
    text = (REPO / "docs" / "workloads.md").read_text()
    missing = [n for n in list_workloads() if f"`{n}`" not in text]
    assert not missing, f"docs/workloads.md does not list {missing}"


def test_copy_of_a_shipped_folder_loads_under_its_new_name(tmp_path):
    dst = tmp_path / "vecadd2"
    shutil.copytree(data_dir("workloads") / "vecadd", dst)
    text = (dst / "workload.yaml").read_text().replace("name: vecadd", "name: vecadd2")
    (dst / "workload.yaml").write_text(text)
    assert load_workload(dst).run({"n": 300}).ok


def test_problem_size_parameters(tmp_path):
    """Which parameters set the problem's size: the `problem:` list, else those that the flops/bytes_moved
    expressions read (in the order of `params`), else none."""
    assert load_workload(make(tmp_path / "a")).problem == ()
    wl = load_workload(make(tmp_path / "b", yaml=YAML + 'bytes_moved: "8 * n + 0 * max(block, 1)"\n'))
    assert wl.problem == ("n", "block")
    wl = load_workload(make(tmp_path / "c", yaml=YAML + 'bytes_moved: "8 * n + block"\nproblem: [n]\n'))
    assert wl.problem == ("n",)
    assert load_workload("saxpy").problem == ("n",) and load_workload("reduce_sum").problem == ("n",)
    assert load_workload("transpose_shared").problem == ("rows", "cols")

"""The ONNX backend-test walk: the models the `onnx` package ships with its backend tests (the `real`,
`simple`, `pytorch-converted` and `pytorch-operator` folders of onnx/backend/test/data: 149 models in
onnx 1.23.2), each imported, compiled (the default pipeline, every legal fusion), lowered, run on the
functional executor and compared with the outputs shipped beside it. Each model's outcome is `pass`, or
the stage that failed and why (`import`, `compile`, `range`: inputs beyond f32, `run`, `mismatch`, `no-data`: the
real models ship only a download address)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpusim.compiler.errors import CompilerError

FOLDERS = ("real", "simple", "pytorch-converted", "pytorch-operator")
RTOL, ATOL = 1e-3, 1e-4  # f32 arithmetic with approximate ex2/lg2/rcp against float64-or-f32 references


@dataclass(frozen=True, slots=True)
class Outcome:
    """One model's result: `status` is pass, no-data, import, range, compile, run or mismatch; `detail` why."""

    folder: str
    name: str
    status: str
    detail: str
    seconds: float

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def data_root() -> Path:
    """The onnx package's backend-test data folder (CompilerError without the package)."""
    try:
        import onnx
    except ImportError as e:
        raise CompilerError('the ONNX suite needs the onnx package: pip install -e ".[onnx]"') from e
    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def models(folders: Iterable[str] = FOLDERS) -> list[tuple[str, Path]]:
    """(folder, model directory) of every shipped test model, sorted."""
    root = data_root()
    return [(f, d) for f in folders for d in sorted((root / f).iterdir()) if d.is_dir()]


def _tensors(folder: Path, prefix: str) -> list[np.ndarray]:
    import onnx
    import onnx.numpy_helper

    out = []
    for path in sorted(folder.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.rsplit("_", 1)[1])):
        t = onnx.TensorProto()
        t.ParseFromString(path.read_bytes())
        out.append(onnx.numpy_helper.to_array(t))
    return out


def run_model(folder: str, directory: Path) -> Outcome:
    """Import, compile, lower, run and compare one model (its first shipped data set)."""
    import onnx

    from gpusim.compiler.ir import Graph
    from gpusim.compiler.lower import lower, run_kernels
    from gpusim.compiler.onnx_import import import_onnx
    from gpusim.compiler.passes.manager import run_pipeline

    start = time.perf_counter()

    def done(status: str, detail: str = "") -> Outcome:
        return Outcome(folder, directory.name, status, detail.splitlines()[0][:200] if detail else "",
                       time.perf_counter() - start)

    path = directory / "model.onnx"
    sets = sorted(directory.glob("test_data_set_*"))
    if not path.is_file() or not sets:
        return done("no-data", "the model is not shipped (a download address only)")
    proto = onnx.load(str(path))
    try:
        graph: Graph = import_onnx(proto)
    except CompilerError as e:
        return done("import", str(e))
    inputs = _tensors(sets[0], "input")
    wanted = _tensors(sets[0], "output")
    params = graph.parameters()
    feeds = {}
    for p, value in zip(params, inputs, strict=False):
        if value.dtype.kind == "f":
            limit = np.finfo(p.type.numpy_dtype).max
            if np.any(np.abs(value[np.isfinite(value)]) > limit):
                return done("range", f"input '{p.name}' ({value.dtype}) holds values beyond the {p.type.dtype} "
                                     "range the GPU computes in")
            value = value.astype(p.type.numpy_dtype)
        elif value.dtype.kind in "iu":
            value = value.astype(np.int32)
        feeds[p.name] = value
    try:
        optimised, _ = run_pipeline(graph)
        kernels = lower(optimised)
    except CompilerError as e:
        return done("compile", str(e))
    try:
        got = run_kernels(optimised, kernels, feeds)
    except Exception as e:  # the executor reports many kinds of faults  # noqa: BLE001
        return done("run", f"{type(e).__name__}: {e}")
    for vi, want in zip(proto.graph.output, wanted, strict=False):
        value = got[vi.name].astype(np.float64)
        if value.shape != want.shape:
            return done("mismatch", f"output '{vi.name}': shape {list(value.shape)}, expected {list(want.shape)}")
        if not np.allclose(value, want.astype(np.float64), rtol=RTOL, atol=ATOL, equal_nan=True):
            err = float(np.nanmax(np.abs(value - want)))
            return done("mismatch", f"output '{vi.name}': max |error| {err:.3g}")
    return done("pass")


def walk(folders: Iterable[str] = FOLDERS, names: Iterable[str] | None = None) -> list[Outcome]:
    """Every model's outcome (only those named in `names` when given)."""
    wanted = set(names) if names is not None else None
    return [run_model(f, d) for f, d in models(folders) if wanted is None or d.name in wanted]


def summary(outcomes: list[Outcome]) -> str:
    """The count that passed, then one line per model that did not: folder/name: stage: why."""
    passed = sum(o.passed for o in outcomes)
    seconds = sum(o.seconds for o in outcomes)
    lines = [f"{passed} of {len(outcomes)} models pass ({seconds:.1f} s)"]
    lines += [f"  {o.folder}/{o.name}: {o.status}: {o.detail}" for o in outcomes if not o.passed]
    return "\n".join(lines)

"""Fitting the calibrated model: a training set of kernels (every template x sampled parameters x
shapes), their simulated cycles, a split into training and held-out kernels, and the fit.

    python -m gpusim.compiler.cost.calibrate [--configs a100 gtx980] [--out FILE] [--cache-dir DIR]

simulates the full set on each config (a few minutes the first time; cached after), fits on the
training kernels, prints the mean absolute percentage error of the analytical and the calibrated model
on the held-out kernels, and writes the coefficients (default gpusim/compiler/data/calibration.json)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from gpusim.compiler.cost.analytical import terms
from gpusim.compiler.cost.calibrated import DEFAULT_PATH, FEATURES, Calibration, features, fit, mape
from gpusim.compiler.cost.simulated import SimulatedCost
from gpusim.compiler.ir import Graph
from gpusim.compiler.lower import Kernel, lower_node, region_of, template_of
from gpusim.compiler.passes.fuse import fuse
from gpusim.config import Config, load_config
from gpusim.errors import GpusimError


def _matmul(m: int, k: int, n: int) -> Graph:
    g = Graph(f"matmul_{m}x{k}x{n}")
    x, w, b = g.parameter("x", (m, k)), g.parameter("w", (k, n)), g.parameter("b", (n,))
    g.output(g.relu(g.add(g.matmul(x, w), b)), "y")
    return g


def _elementwise(rows: int, cols: int) -> Graph:
    g = Graph(f"elementwise_{rows}x{cols}")
    x, b = g.parameter("x", (rows, cols)), g.parameter("b", (cols,))
    g.output(g.gelu(g.add(g.mul(x, 0.5), b)), "y")
    return g


def _row(op: str, rows: int, cols: int) -> Graph:
    g = Graph(f"{op}_{rows}x{cols}")
    x = g.mul(g.parameter("x", (rows, cols)), 0.125)
    y = g.softmax(x) if op == "softmax" else g.layernorm(x) if op == "layernorm" else g.reduce_sum(x, 1)
    g.output(y, "y")
    return g


def _transpose(rows: int, cols: int) -> Graph:
    g = Graph(f"transpose_{rows}x{cols}")
    g.output(g.transpose(g.parameter("x", (rows, cols))), "y")
    return g


# (graph, candidates sampled from its template's space): small enough to simulate in well under a second
FULL = [(_matmul(32, 64, 128), 8), (_matmul(64, 64, 64), 8), (_matmul(32, 128, 10), 6), (_matmul(96, 48, 80), 6),
        (_matmul(128, 32, 128), 6), (_elementwise(64, 256), 6), (_elementwise(256, 1000), 6),
        (_row("softmax", 32, 32), 3), (_row("softmax", 64, 512), 4), (_row("layernorm", 16, 1024), 4),
        (_row("reduce_sum", 256, 64), 3), (_transpose(64, 128), 5), (_transpose(200, 96), 5)]
SMALL = [(_matmul(32, 64, 128), 6), (_matmul(64, 32, 64), 6), (_elementwise(64, 256), 4),
         (_row("softmax", 32, 64), 3), (_row("layernorm", 16, 256), 3), (_transpose(64, 64), 4)]


def training_kernels(cfgs: Sequence[Config], sets: Sequence[tuple[Graph, int]] = FULL, seed: int = 0
                     ) -> Iterator[Kernel]:
    """For each (graph, count) of `sets`: its fused root's default kernel and `count` - 1 more from
    random points of the template's space that fit every config of `cfgs`."""
    rng = np.random.default_rng(seed)
    for graph, count in sets:
        fused, _ = fuse(graph)
        node = fused[fused.outputs["y"]]
        template, region = template_of(node), region_of(fused, node)
        space = template.space(region, cfgs[0])
        seen, tries = set(), 0
        points = [template.default(region)]
        while len(seen) < count and tries < 200 * count:
            point = points.pop() if points else {k: v[rng.integers(len(v))] for k, v in space.items()}
            tries += 1
            key = tuple(sorted(point.items()))
            if key in seen:
                continue
            try:
                kernel = lower_node(fused, node, point)
                for cfg in cfgs:
                    terms(kernel, cfg)
            except GpusimError:
                continue
            seen.add(key)
            yield kernel


@dataclass(frozen=True, slots=True)
class Sample:
    """A kernel on a config: its features, its analytical prediction and its simulated cycles."""

    kernel: Kernel
    config: str
    x: np.ndarray
    analytical: float
    simulated: float


def samples(kernels: Sequence[Kernel], cfgs: Sequence[Config], sim: SimulatedCost) -> list[Sample]:
    """Every kernel on every config, simulated (through `sim`'s cache)."""
    return [Sample(k, cfg.name, features(k, cfg), terms(k, cfg).cycles, sim.kernel_cycles(k, cfg)[0])
            for cfg in cfgs for k in kernels]


def split(items: Sequence, held_out: float = 0.35, seed: int = 0) -> tuple[list, list]:
    """A seeded random split into (training, held-out)."""
    order = np.random.default_rng(seed).permutation(len(items))
    cut = len(items) - max(1, round(held_out * len(items)))
    return [items[i] for i in order[:cut]], [items[i] for i in order[cut:]]


def calibrate(train: Sequence[Sample], test: Sequence[Sample]) -> tuple[Calibration, dict[str, float]]:
    """Fit on `train`; the MAPE (percent) of both models on `test` and of the fit on `train`."""
    cal = fit(np.array([s.x for s in train]), np.array([s.simulated for s in train]))
    actual = [s.simulated for s in test]
    report = {"samples_train": len(train), "samples_held_out": len(test),
              "mape_train_calibrated": mape([cal.predict(s.x) for s in train], [s.simulated for s in train]),
              "mape_held_out_analytical": mape([s.analytical for s in test], actual),
              "mape_held_out_calibrated": mape([cal.predict(s.x) for s in test], actual)}
    return Calibration(cal.coefficients, report), report


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpusim.compiler.cost.calibrate", description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", nargs="+", default=["a100", "gtx980"], help="configs to simulate on")
    p.add_argument("--out", default=str(DEFAULT_PATH), help="where to write the coefficients")
    p.add_argument("--cache-dir", help="simulation cache (default $GPUSIM_CACHE_DIR or ~/.cache/gpusim)")
    args = p.parse_args(argv)
    cfgs = [load_config(c) for c in args.configs]
    kernels = list(training_kernels(cfgs))
    train_k, test_k = split(kernels)
    sim = SimulatedCost(args.cache_dir)
    cal, report = calibrate(samples(train_k, cfgs, sim), samples(test_k, cfgs, sim))
    cal = Calibration(cal.coefficients, report | {"configs": args.configs})
    cal.save(args.out)
    for k, v in report.items():
        print(f"{k:28s} {v:.1f}" if isinstance(v, float) else f"{k:28s} {v}")
    print(f"coefficients ({', '.join(FEATURES)}): {', '.join(f'{c:.4g}' for c in cal.coefficients)} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

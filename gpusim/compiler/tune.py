"""The autotuner: for each kernel, search its template's parameters (the search space the template
declares for the node and config, as a Triton kernel declares its configs) and keep the best.

- `grid`: every point of the space;
- `local`: random search with local refinement: from the template's default, then from random points,
  climb to the best neighbour (one parameter moved to the next value of its list) until none is better,
  within `budget` scored candidates.

Every candidate is scored with `cost`; with a `measure` model as well, the `top_k` best by `cost` are
scored again by `measure`, which picks among them (a cheap model searches broadly, an expensive one
decides, as TVM's measured top candidates). The best per (template, what the node computes — operators,
shapes, dtype —, config hash, models, strategy) is cached on disk, written atomically, so a second
compilation reuses it."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower import lower_node, region_of, template_of
from gpusim.compiler.store import Store, digest
from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.sweep.cache import code_version

STRATEGIES = ("grid", "local")
Params = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TuneResult:
    """The tuning of one node: the chosen `params` and their `cycles` (by `measure` if given, else by
    `cost`), how many candidates were scored, the `top` candidates by `cost` (params, cycles) and, with
    a measure model, the same candidates' `measured` cycles; `cached` when read from the cache."""

    node: str
    template: str
    params: Params
    cycles: float
    evaluated: int
    top: tuple[tuple[Params, float], ...]
    measured: tuple[float, ...] = ()
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["top"] = [[p, c] for p, c in self.top]
        d["measured"] = list(self.measured)
        return d


class Tuner:
    """Tunes the kernels of graphs for `cfg` (module docstring). `cache_dir`: where the best
    configurations are cached (default `$GPUSIM_CACHE_DIR`, else ~/.cache/gpusim); `cache=False` tunes
    afresh every time and stores nothing."""

    def __init__(self, cfg: Config, cost: CostModel, *, strategy: str = "local", budget: int = 48,
                 measure: CostModel | None = None, top_k: int = 4, seed: int = 0,
                 cache_dir: str | os.PathLike | None = None, cache: bool = True):
        if strategy not in STRATEGIES:
            raise CompilerError(f"unknown search strategy {strategy!r}; the strategies are {', '.join(STRATEGIES)}")
        if budget < 1 or top_k < 1:
            raise CompilerError(f"budget ({budget}) and top_k ({top_k}) must be at least 1")
        self.cfg, self.cost, self.measure = cfg, cost, measure
        self.strategy, self.budget, self.top_k, self.seed = strategy, budget, top_k, seed
        self.store = Store(cache_dir, "tune", ("params", "cycles", "evaluated", "top", "measured")) if cache else None

    def tune(self, graph: Graph) -> dict[str, TuneResult]:
        """Tune every node of `graph` that becomes a kernel, by node name."""
        return {n.name: self.tune_node(graph, n) for n in graph.topo_order() if template_of(n) is not None}

    def tune_node(self, graph: Graph, node: Node) -> TuneResult:
        template = template_of(node)
        if template is None:
            raise CompilerError(f"node %{node.name} ({node.op}) needs no kernel")
        key = self._key(graph, node)
        if self.store is not None and (entry := self.store.get(key)) is not None:
            return TuneResult(node.name, template.name, entry["params"], entry["cycles"], entry["evaluated"],
                              tuple((p, c) for p, c in entry["top"]), tuple(entry["measured"]), cached=True)
        region = region_of(graph, node)
        space = template.space(region, self.cfg)
        scores = _Scores(lambda p: self._score(self.cost, graph, node, p))
        if self.strategy == "grid":
            for point in _grid(space):
                scores[point]
        else:
            _local_search(scores, space, template.default(region), self.budget, self.seed)
        ranked = sorted(scores.valid(), key=lambda pc: pc[1])
        if not ranked:
            raise CompilerError(f"node %{node.name}: no {template.name} configuration fits {self.cfg.name}")
        top = tuple(ranked[:self.top_k])
        measured: tuple[float, ...] = ()
        best, cycles = top[0]
        if self.measure is not None:
            measured = tuple(self._score(self.measure, graph, node, p) for p, _ in top)
            best, cycles = top[int(np.argmin(measured))][0], min(measured)
        result = TuneResult(node.name, template.name, best, cycles, scores.count, top, measured)
        if self.store is not None:
            self.store.put(key, result.to_dict())
        return result

    def _score(self, model: CostModel, graph: Graph, node: Node, params: Params) -> float:
        try:
            return model.cost(lower_node(graph, node, params), self.cfg).cycles
        except GpusimError:  # parameters that do not fit the node or the config
            return math.inf

    def _key(self, graph: Graph, node: Node) -> str:
        return digest({"kernel": lower_node(graph, node).signature, "config": self.cfg.hash(),
                       "cost": self.cost.key, "measure": self.measure.key if self.measure else None,
                       "strategy": self.strategy, "budget": self.budget, "top_k": self.top_k, "seed": self.seed,
                       "code": code_version()})


class _Scores:
    """Memoised scores of parameter points; `count` is the number of valid points scored."""

    def __init__(self, score):
        self._score, self._memo, self.count = score, {}, 0

    def __getitem__(self, point: Params) -> float:
        key = tuple(sorted(point.items()))
        if key not in self._memo:
            self._memo[key] = self._score(point)
            self.count += math.isfinite(self._memo[key])
        return self._memo[key]

    def __len__(self) -> int:
        return len(self._memo)

    def valid(self) -> Iterator[tuple[Params, float]]:
        return ((dict(k), c) for k, c in self._memo.items() if math.isfinite(c))


def _grid(space: Mapping[str, tuple]) -> Iterator[Params]:
    keys = list(space)
    for values in itertools.product(*(space[k] for k in keys)):
        yield dict(zip(keys, values, strict=True))


def _neighbours(point: Params, space: Mapping[str, tuple]) -> Iterator[Params]:
    for k, values in space.items():
        if point[k] in values:
            i = values.index(point[k])
            for j in (i - 1, i + 1):
                if 0 <= j < len(values):
                    yield {**point, k: values[j]}


def _local_search(scores: _Scores, space: Mapping[str, tuple], default: Params, budget: int, seed: int) -> None:
    """Hill-climb from `default`, then from random points, until `budget` valid points are scored, the
    whole space has been seen, or 50 x budget points were tried."""
    rng = np.random.default_rng(seed)
    size = math.prod(len(v) for v in space.values())
    start: Params | None = default
    while scores.count < budget and len(scores) < min(size, 50 * budget):
        point = start if start is not None else {k: v[rng.integers(len(v))] for k, v in space.items()}
        start = None
        if scores[point] == math.inf:
            continue
        while scores.count < budget:
            options = list(_neighbours(point, space))
            for p in options:
                scores[p]
            best = min(options, key=scores.__getitem__, default=point)
            if scores[best] >= scores[point]:
                break
            point = best


def spearman(a: Any, b: Any) -> float:
    """Spearman's rank correlation of two equally long sequences (ties get their average rank)."""
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: Any) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    for value in np.unique(x):
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks

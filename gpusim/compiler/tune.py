"""The autotuner: for each kernel, search its template's parameters (the search space the template
declares for the node and config, as a Triton kernel declares its configs) and keep the best.

- `grid`: every point of the space;
- `local`: random search with local refinement: from the template's default, then from random points,
  climb to the best neighbour (one parameter moved to the next value of its list) until none is better,
  within `budget` scored candidates;
- `anneal`: simulated annealing with restarts (as Ansor and MetaSchedule escape local optima): from the
  default, a walk that moves to a random neighbour when it is better, and when it is worse by a relative
  d with probability exp(-d / T) (T from 0.5, x 0.85 a step); after 8 steps without a better best it
  restarts at the starting temperature, alternately from the best point so far (to cross the barriers
  around it) and from a random point; within `budget` scored candidates.

Every candidate is scored with `cost`, the candidates of a step together (every point of the grid, every
neighbour of a climb), so a model that scores in parallel (`SimulatedCost`: a process pool of `jobs`
workers, or Dask) keeps its workers busy; with a `measure` model as well, the `top_k` best by `cost` are
scored again by `measure`, which picks among them (a cheap model searches broadly, an expensive one
decides, as TVM's measured top candidates). With a `tie_break` model instead, the candidates within
1 % of the best by `cost` (an analytical model's ties) are scored by it (the simulated model), which
picks among them. Every simulation the tuner runs (a model named `simulated` as cost, measure or tie
break) is kept in `simulations` (kernel, cycles), from which `refit` fits the calibrated model anew
(cost/calibrated.py: `Calibration.refit`). The winner is checked against the reference evaluator (its
kernel run on the functional executor over seeded inputs; tinygrad's BEAM_VALIDATE): a candidate whose
values differ is rejected and the next best checked. The best per (template, what the node computes —
operators, shapes, dtype —, config hash, models, strategy) is cached on disk, written atomically, so a
second compilation reuses it."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.cost.calibrated import DEFAULT_PATH, Calibration, features
from gpusim.compiler.cost.energy import kernel_energy
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.evaluate import evaluate
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower import Kernel, lower_node, region_of, run_kernels, template_of
from gpusim.compiler.lower.lowering import select
from gpusim.compiler.store import Store, digest
from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.stats.files import write_atomic
from gpusim.sweep.cache import code_version, default_dir
from gpusim.sweep.executors import DaskExecutor, LocalExecutor

STRATEGIES = ("grid", "local", "anneal")
OBJECTIVES = ("time", "energy")  # what the tuner minimises: a model's cycles, or the energy over them
TIE = 0.01  # analytical costs within 1 % of the best are ties
Params = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TuneResult:
    """The tuning of one node: the chosen `params` and their `cycles` (by `measure` if given, else by
    `cost`), how many candidates were scored, the `top` candidates by `cost` (params, cycles) and, with
    a measure model, the same candidates' `measured` cycles; `rejected`: better candidates whose values
    differed from the reference evaluator's; `tied`: with a tie-break model, the candidates tied with the
    best by `cost` (params, tie-break cycles); `cached` when read from the cache. With `objective`
    "energy" every score (`cycles`, `top`, `measured`, `tied`) is the energy in joules over the model's
    cycles (cost/energy.py) instead of the cycles."""

    node: str
    template: str
    params: Params
    cycles: float
    evaluated: int
    top: tuple[tuple[Params, float], ...]
    measured: tuple[float, ...] = ()
    rejected: tuple[Params, ...] = ()
    tied: tuple[tuple[Params, float], ...] = ()
    cached: bool = False
    objective: str = "time"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["top"] = [[p, c] for p, c in self.top]
        d["measured"] = list(self.measured)
        d["rejected"] = list(self.rejected)
        d["tied"] = [[p, c] for p, c in self.tied]
        return d


def refit_file(path: str | os.PathLike | None = None) -> Path:
    """The calibration file a refit reads and writes: `path`, or calibration.json in gpusim's cache folder;
    a copy of the shipped calibration is put there first when it does not exist. The installed package's
    file is refused (every other user of the installation reads it)."""
    path = Path(default_dir() / "calibration.json" if path is None else path)
    if path.resolve() == Path(DEFAULT_PATH).resolve():
        raise CompilerError(f"refit {path}: that is the installed package's calibration; name a file of your own")
    if not path.exists():
        write_atomic(path, Path(DEFAULT_PATH).read_text())
    return path


class Tuner:
    """Tunes the kernels of graphs for `cfg` (module docstring). `cache_dir`: where the best
    configurations are cached (default `$GPUSIM_CACHE_DIR`, else ~/.cache/gpusim); `cache=False` tunes
    afresh every time and stores nothing. `jobs` (a LocalExecutor of that many processes) or `executor`
    is where a parallel model (`SimulatedCost`) scores the candidates; default: the model's own.
    `validate=False` skips the check of the winner against the reference evaluator; `tie_break`: the
    model breaking `cost`'s ties (module docstring). `objective`: what is minimised, a model's cycles
    ("time") or the energy over them ("energy": the config's power model on the kernel's counted work,
    cost/energy.py)."""

    def __init__(self, cfg: Config, cost: CostModel, *, strategy: str = "local", budget: int = 48,
                 measure: CostModel | None = None, top_k: int = 4, seed: int = 0,
                 cache_dir: str | os.PathLike | None = None, cache: bool = True, jobs: int | None = None,
                 executor: LocalExecutor | DaskExecutor | None = None, validate: bool = True,
                 tie_break: CostModel | None = None, objective: str = "time"):
        if objective not in OBJECTIVES:
            raise CompilerError(f"unknown objective {objective!r}; the objectives are {', '.join(OBJECTIVES)}")
        if objective == "energy" and cfg.power is None:
            raise CompilerError(f"--objective energy: {cfg.name} has no power model (a power: section; a100 and "
                                f"h200 have one)")
        self.objective = objective
        if strategy not in STRATEGIES:
            raise CompilerError(f"unknown search strategy {strategy!r}; the strategies are {', '.join(STRATEGIES)}")
        if budget < 1 or top_k < 1:
            raise CompilerError(f"budget ({budget}) and top_k ({top_k}) must be at least 1")
        self.cfg, self.cost, self.measure = cfg, cost, measure
        self.strategy, self.budget, self.top_k, self.seed = strategy, budget, top_k, seed
        self.store = Store(cache_dir, "tune", ("params", "cycles", "evaluated", "top", "measured")) if cache else None
        self.validate, self.tie_break = validate, tie_break
        self.simulations: list[tuple[Kernel, float]] = []
        if executor is None and jobs is not None:
            executor = LocalExecutor(jobs)
        self.options = {} if executor is None else {"executor": executor}

    def tune(self, graph: Graph) -> dict[str, TuneResult]:
        """Tune every node of `graph` that becomes a kernel, by node name."""
        return {n.name: self.tune_node(graph, n) for n in graph.topo_order() if template_of(n) is not None}

    def tune_node(self, graph: Graph, node: Node) -> TuneResult:
        template, _ = select(graph, node, self.cfg)
        if template is None:
            raise CompilerError(f"node %{node.name} ({node.op}) needs no kernel")
        key = self._key(graph, node)
        if self.store is not None and (entry := self.store.get(key)) is not None:
            return TuneResult(node.name, template.name, entry["params"], entry["cycles"], entry["evaluated"],
                              tuple((p, c) for p, c in entry["top"]), tuple(entry["measured"]),
                              tuple(entry.get("rejected", ())), tuple((p, c) for p, c in entry.get("tied", ())),
                              cached=True, objective=self.objective)
        region = region_of(graph, node)
        space = template.space(region, self.cfg)
        scores = _Scores(lambda points: self._scores(self.cost, graph, node, points))
        if self.strategy == "grid":
            scores.many(list(_grid(space)))
        elif self.strategy == "anneal":
            anneal(scores, space, template.default(region), self.budget, self.seed)
        else:
            _local_search(scores, space, template.default(region), self.budget, self.seed)
        ranked = sorted(scores.valid(), key=lambda pc: pc[1])
        if not ranked:
            raise CompilerError(f"node %{node.name}: no {template.name} configuration fits {self.cfg.name}")
        top = tuple(ranked[:self.top_k])
        measured: tuple[float, ...] = ()
        order = [(p, c) for p, c in ranked]
        if self.measure is not None:
            measured = tuple(self._scores(self.measure, graph, node, [p for p, _ in top]))
            picks = sorted(range(len(top)), key=lambda i: measured[i])
            order = [(top[i][0], measured[i]) for i in picks if math.isfinite(measured[i])]
        tied: tuple[tuple[Params, float], ...] = ()
        if self.measure is None and self.tie_break is not None:
            close = [p for p, c in ranked if c <= ranked[0][1] * (1 + TIE)]
            if len(close) > 1:
                tied = tuple(zip(close, self._scores(self.tie_break, graph, node, close), strict=True))
                picks = sorted((pc for pc in tied if math.isfinite(pc[1])), key=lambda pc: pc[1])
                order = picks + [pc for pc in order if pc[0] not in close]
        rejected = []
        while order and self.validate and not _matches_reference(graph, node, order[0][0], self.cfg, self.seed):
            rejected.append(order.pop(0)[0])
        if not order:
            raise CompilerError(f"node %{node.name}: no {template.name} candidate fits {self.cfg.name} and computes "
                                f"what the reference evaluator does ({len(rejected)} checked)")
        best, cycles = order[0]
        result = TuneResult(node.name, template.name, best, cycles, scores.count, top, measured, tuple(rejected),
                            tied, objective=self.objective)
        if self.store is not None:
            self.store.put(key, result.to_dict())
        return result

    def refit(self, path: str | os.PathLike | None = None, prior: float = 4.0) -> Calibration:
        """The calibrated model refitted from the simulations this tuner ran (Calibration.refit), starting
        from the calibration at `path` and saved there (default: calibration.json in gpusim's cache folder,
        started from a copy of the shipped one). Never the installed package's file, which every other
        user of the installation reads."""
        if not self.simulations:
            raise CompilerError("no simulations to refit the calibrated model from: tune with the simulated "
                                "model as cost, measure or tie break")
        path = refit_file(path)
        x = np.array([features(k, self.cfg) for k, _ in self.simulations])
        refitted = Calibration.load(path).refit(x, np.array([c for _, c in self.simulations]), prior)
        refitted.save(path)
        return refitted

    def _scores(self, model: CostModel, graph: Graph, node: Node, points: list[Params]) -> list[float]:
        """The cycles of each point by `model` (its energy in joules over them with objective "energy");
        inf for parameters that do not fit the node or the config."""
        kernels = {}
        for i, p in enumerate(points):
            try:
                kernels[i] = lower_node(graph, node, p, self.cfg)
            except GpusimError:
                pass
        estimates = dict(zip(kernels, model.costs(list(kernels.values()), self.cfg, **self.options), strict=True))
        if model.name == "simulated":
            self.simulations += [(kernels[i], e.kernel_cycles) for i, e in estimates.items() if e is not None]
        if self.objective == "energy":
            return [math.inf if estimates.get(i) is None else kernel_energy(kernels[i], self.cfg, estimates[i])
                    for i in range(len(points))]
        return [math.inf if estimates.get(i) is None else estimates[i].cycles for i in range(len(points))]

    def _key(self, graph: Graph, node: Node) -> str:
        return digest({"kernel": lower_node(graph, node, cfg=self.cfg).signature, "config": self.cfg.hash(),
                       "cost": self.cost.key, "measure": self.measure.key if self.measure else None,
                       "strategy": self.strategy, "budget": self.budget, "top_k": self.top_k, "seed": self.seed,
                       "validate": self.validate, "tie_break": self.tie_break.key if self.tie_break else None,
                       "objective": self.objective, "code": code_version()})


def _matches_reference(graph: Graph, node: Node, params: Params, cfg: Config, seed: int) -> bool:
    """Whether `node`'s kernel with `params`, run on the functional executor over seeded inputs in
    [-1, 1) (integers -8..8 for i8 tensors), gives the reference evaluator's values (to 1e-4 of the
    largest for f32, 1e-2 for f16 and bf16: a kernel accumulates in f32 and rounds once, the evaluator
    once per operator)."""
    sources = {s: graph[s] for s in node.inputs}
    alone = Graph.from_nodes([s if s.op == "constant" else Node(n, "parameter", (), s.type)
                              for n, s in sources.items()] + [node], {"y": node.name})
    rng = np.random.default_rng(seed)
    inputs = {p.name: (rng.integers(-8, 9, p.shape) if p.dtype == "i8" else rng.uniform(-1, 1, p.shape))
              .astype(p.type.numpy_dtype) for p in alone.parameters()}
    got = run_kernels(alone, [lower_node(alone, node, params, cfg)], inputs, cfg)["y"].astype(np.float64)
    want = evaluate(alone, inputs)["y"].astype(np.float64)
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-30)
    return bool(np.all(np.abs(got - want) <= (1e-2 if node.dtype in ("f16", "bf16") else 1e-4) * scale))


class _Scores:
    """Memoised scores of parameter points, scored a batch at a time by `score(points) -> cycles`;
    `count` is the number of valid points scored."""

    def __init__(self, score):
        self._score, self._memo, self.count = score, {}, 0

    def __getitem__(self, point: Params) -> float:
        return self.many([point])[0]

    def many(self, points: list[Params]) -> list[float]:
        """The points' scores, those not scored yet scored together (in one batch)."""
        keys = [tuple(sorted(p.items())) for p in points]
        new = {k: p for k, p in zip(keys, points, strict=True) if k not in self._memo}
        for k, c in zip(new, self._score(list(new.values())) if new else [], strict=True):
            self._memo[k] = c
            self.count += math.isfinite(c)
        return [self._memo[k] for k in keys]

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
            scores.many(options)
            best = min(options, key=scores.__getitem__, default=point)
            if scores[best] >= scores[point]:
                break
            point = best


def anneal(scores: _Scores, space: Mapping[str, tuple], default: Params, budget: int, seed: int, *,
           start_temperature: float = 0.5, cooling: float = 0.85, patience: int = 8) -> None:
    """Simulated annealing with restarts (module docstring) until `budget` valid points are scored, the
    whole space has been seen, or 50 x budget proposals were made. Costs are compared relatively, so
    the temperature means the same for a kernel of 1,000 cycles and one of 1,000,000."""
    rng = np.random.default_rng(seed)
    size = math.prod(len(v) for v in space.values())

    def random_point() -> Params:
        return {k: v[rng.integers(len(v))] for k, v in space.items()}

    point, temperature, stale, best, restarts = default, start_temperature, 0, math.inf, 0
    best_point = default
    for _ in range(50 * budget):
        if scores.count >= budget or len(scores) >= size:
            return
        if not math.isfinite(scores[point]):
            point = random_point()
            continue
        options = list(_neighbours(point, space))
        if not options:
            return
        proposal = options[rng.integers(len(options))]
        here, there = scores[point], scores[proposal]
        if there < here or (math.isfinite(there) and rng.random() < math.exp(-(there - here) / here / temperature)):
            point = proposal
        temperature *= cooling
        if scores[point] < best:
            best, best_point, stale = scores[point], point, 0
        else:
            stale += 1
        if stale >= patience:  # restart, hot again: from the best point so far, then from a random one, ...
            restarts += 1
            point = best_point if restarts % 2 else random_point()
            temperature, stale = start_temperature, 0


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

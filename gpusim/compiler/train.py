"""A training step as one graph: the model's forward pass and a loss, the backward pass built by
`autodiff.grad`, and the optimizer's update (SGD or Adam) as element-wise graph operators. The step
graph goes through the pass pipeline and lowering like any model; `train` runs its kernels on the
functional executor for N steps (each step's updated weights, and Adam's moments, fed to the next) and
costs every kernel with a cost model, by phase (forward, backward, update).

    >>> from gpusim.compiler import models
    >>> step = training_step(models.mlp2(4, 3, 5, 2), optimizer="sgd", lr=0.1)
    >>> sorted(step.graph.outputs)[:3]
    ['loss', 'new_b1', 'new_b2']
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpusim.compiler.autodiff import grad, mse_loss, softmax_cross_entropy
from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.driver import Lowered, estimate
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph
from gpusim.compiler.lower import lower, run_kernels
from gpusim.compiler.passes.manager import PipelineReport, run_pipeline
from gpusim.config import Config

OPTIMIZERS = ("sgd", "adam")
LOSSES = ("mse", "xent")
PHASES = ("forward", "backward", "update")
ADAM_BETAS = (0.9, 0.999)  # Kingma & Ba 2015, section 2: the defaults of their Algorithm 1
ADAM_EPS = 1e-8


@dataclass(frozen=True, slots=True)
class TrainingStep:
    """The step graph, the weights it trains, the data inputs it reads, the optimizer state inputs
    (Adam's moments: `m_<w>`, `v_<w>`), and the phase of every node (forward, backward, update)."""

    graph: Graph
    weights: tuple[str, ...]
    data: tuple[str, ...]
    state: tuple[str, ...]
    optimizer: str
    lr: float
    phase: Mapping[str, str]

    def phase_of(self, graph: Graph, name: str) -> str:
        """The phase of node `name` of `graph` (the step graph or one derived from it by passes): its
        own, or for a node a pass made, the latest phase among its inputs."""
        if name in self.phase:
            return self.phase[name]
        inputs = [self.phase_of(graph, i) for i in graph[name].inputs]
        return max(inputs, key=PHASES.index, default="forward")


def training_step(model: Graph, *, optimizer: str = "sgd", lr: float = 0.01, loss: str = "mse",
                  data: Sequence[str] | None = None) -> TrainingStep:
    """The training step of `model` (one output): the loss of that output against a parameter `target`
    of its shape (mean squared error, or softmax cross-entropy with `target` as the labels), the
    gradients of every float parameter except `data` (default: the first parameter) and their
    update. SGD: w - lr g. Adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
    w - lr_t m / (sqrt v + eps), with lr_t = lr sqrt(1 - b2^t) / (1 - b1^t) a scalar input `lr_t`
    (the bias correction changes with the step t)."""
    if optimizer not in OPTIMIZERS:
        raise CompilerError(f"unknown optimizer '{optimizer}' (known: {', '.join(OPTIMIZERS)})")
    if loss not in LOSSES:
        raise CompilerError(f"unknown loss '{loss}' (known: {', '.join(LOSSES)})")
    if not (isinstance(lr, int | float) and lr > 0 and math.isfinite(lr)):
        raise CompilerError(f"learning rate {lr!r} is not a positive number")
    if len(model.outputs) != 1:
        raise CompilerError(f"training needs a model with one output; {model.name} has {len(model.outputs)}")
    params = model.parameters()
    data = tuple(data) if data is not None else (params[0].name,)
    weights = tuple(p.name for p in params if p.name not in data and p.dtype != "i32")
    if not weights:
        raise CompilerError(f"{model.name}: no parameter left to train (data inputs: {', '.join(data)})")
    g = model.derive()
    for node in model.topo_order():
        g.add_node(node)
    (out,) = model.outputs.values()
    target = g.parameter("target", model[out].shape, model[out].dtype)
    value = (mse_loss if loss == "mse" else softmax_cross_entropy)(g, out, target)
    g.output(value, "loss")
    forward = set(g.nodes)
    backward = grad(g, "loss", weights, keep_outputs=False)
    before_update = set(backward.nodes)
    state = _update(backward, weights, optimizer, lr)
    phase = {n: "forward" if n in forward else "backward" if n in before_update else "update" for n in backward.nodes}
    return TrainingStep(backward, weights, data + ("target",), state, optimizer, float(lr), phase)


def _update(g: Graph, weights: Sequence[str], optimizer: str, lr: float) -> tuple[str, ...]:
    """The optimizer's update of every weight, as outputs new_<w> (and new_m_<w>, new_v_<w>)."""
    grads = {w: g.outputs.pop(f"grad_{w}") for w in weights}
    state: list[str] = []
    lr_t = g.parameter("lr_t", (), g[weights[0]].dtype) if optimizer == "adam" else None
    b1, b2 = ADAM_BETAS
    for w in weights:
        dw = g[grads[w]]
        if optimizer == "sgd":
            g.output(g.sub(w, g.mul(dw, float(lr))), f"new_{w}")
            continue
        m, v = g.parameter(f"m_{w}", dw.shape, dw.dtype), g.parameter(f"v_{w}", dw.shape, dw.dtype)
        m2 = g.add(g.mul(m, b1), g.mul(dw, 1 - b1))
        v2 = g.add(g.mul(v, b2), g.mul(g.mul(dw, dw), 1 - b2))
        step = g.div(m2, g.add(g.emit("sqrt", (v2,)), ADAM_EPS))
        g.output(g.sub(w, g.mul(step, lr_t)), f"new_{w}")
        g.output(m2, f"new_m_{w}")
        g.output(v2, f"new_v_{w}")
        state += [m.name, v.name]
    return tuple(state)


@dataclass(frozen=True, slots=True)
class TrainReport:
    """What `train` did: the step, the pipeline's report, the lowered step with every kernel's estimate,
    each kernel's phase, and the loss of every step as the functional executor computed it."""

    name: str
    config: str
    cost: str
    step: TrainingStep
    pipeline: PipelineReport
    lowered: Lowered
    phases: tuple[str, ...]
    losses: tuple[float, ...]

    def phase_totals(self) -> dict[str, tuple[int, float, float]]:
        """Phase -> (kernels, cycles with launch overheads, seconds) of one step."""
        totals = {p: (0, 0.0, 0.0) for p in PHASES}
        for phase, e in zip(self.phases, self.lowered.estimates, strict=True):
            n, c, s = totals[phase]
            totals[phase] = (n + 1, c + e.cycles, s + e.seconds)
        return totals

    def to_dict(self) -> dict:
        return {"model": self.name, "config": self.config, "cost_model": self.cost, "optimizer": self.step.optimizer,
                "lr": self.step.lr, "weights": list(self.step.weights), "losses": list(self.losses),
                "phases": {p: {"kernels": n, "cycles": c, "seconds": s}
                           for p, (n, c, s) in self.phase_totals().items()},
                "step_cycles": self.lowered.cycles, "step_seconds": self.lowered.seconds}

    def __str__(self) -> str:
        g = self.step.graph
        lines = [f"{self.name} training step on {self.config}: {self.step.optimizer}, lr {self.step.lr:g}, "
                 f"weights {', '.join(self.step.weights)}; cost model: {self.cost}",
                 f"step graph: {len(g)} nodes ({sum(v == 'forward' for v in self.step.phase.values())} forward, "
                 f"{sum(v == 'backward' for v in self.step.phase.values())} backward, "
                 f"{sum(v == 'update' for v in self.step.phase.values())} update) -> "
                 f"{len(self.lowered.graph)} after {' -> '.join(p.name for p in self.pipeline.passes)}", "",
                 f"{'phase':<9} {'kernels':>7} {'cycles':>10} {'us':>8}"]
        for phase, (n, c, s) in self.phase_totals().items():
            lines.append(f"{phase:<9} {n:>7} {c:>10,.0f} {s * 1e6:>8.2f}")
        lines += [f"{'step':<9} {len(self.lowered.kernels):>7} {self.lowered.cycles:>10,.0f} "
                  f"{self.lowered.seconds * 1e6:>8.2f}", "", "step  loss (kernels on the functional executor)"]
        lines += [f"{i:>4}  {loss:.6g}" for i, loss in enumerate(self.losses, 1)]
        return "\n".join(lines)


def initial_values(step: TrainingStep, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic starting values: data and target uniform in [-1, 1) (for cross-entropy, one-hot
    labels), matrices uniform in +-1/sqrt(fan-in) (LeCun's scale), vectors zero, Adam's moments zero. A
    matrix's fan-in is its second-last axis (K of a K x N weight); a convolution's M x C/group x k...
    weights have C/group x k... inputs a output."""
    rng = np.random.default_rng(seed)
    values = {}
    users = step.graph.users()
    for p in step.graph.parameters():
        dt = p.type.numpy_dtype
        if p.name in step.state or p.name == "lr_t":
            values[p.name] = np.zeros(p.shape, dt)
        elif p.name in step.weights:
            conv = any(step.graph.nodes[u].op == "conv" and step.graph.nodes[u].inputs[1] == p.name
                       for u in users[p.name])
            fan_in = math.prod(p.shape[1:]) if conv else p.shape[-2] if p.type.rank >= 2 else 0
            bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
            values[p.name] = rng.uniform(-bound, bound, p.shape).astype(dt)
        else:
            values[p.name] = rng.uniform(-1, 1, p.shape).astype(dt)
    return values


def train(model: Graph, cfg: Config, *, cost: CostModel, steps: int = 10, optimizer: str = "sgd", lr: float = 0.01,
          loss: str = "mse", seed: int = 0) -> TrainReport:
    """Compile `model`'s training step (the default pipeline), lower it, estimate every kernel with `cost`
    on `cfg`, and run `steps` steps of it on the functional executor from `initial_values(seed)`."""
    if steps < 1:
        raise CompilerError(f"steps is a positive number, not {steps}")
    step = training_step(model, optimizer=optimizer, lr=lr, loss=loss)
    graph, pipeline = run_pipeline(step.graph)
    kernels = lower(graph)
    lowered = estimate(graph, kernels, cost, cfg)
    phases = tuple(step.phase_of(graph, k.node.name) for k in kernels)
    values, losses = initial_values(step, seed), []
    b1, b2 = ADAM_BETAS
    for t in range(1, steps + 1):
        if optimizer == "adam":
            values["lr_t"] = np.asarray(lr * math.sqrt(1 - b2**t) / (1 - b1**t), values["lr_t"].dtype)
        out = run_kernels(graph, kernels, values, cfg)
        losses.append(float(out["loss"]))
        for name in (*step.weights, *step.state):
            values[name] = out[f"new_{name}"]
    return TrainReport(model.name, cfg.name, cost.name, step, pipeline, lowered, phases, tuple(losses))

"""A transformer layer split across N GPUs, Megatron style (tensor parallel), as a program on a node.

Each GPU holds 1/N of every weight matrix. Self-attention: the QKV projection (hidden -> 3 hidden) is
split by columns, so each GPU computes its heads' Q, K and V for all tokens; the output projection
(hidden -> hidden) is split by rows, each GPU multiplying its heads' part, so the partial outputs are
summed by an all-reduce of tokens x hidden float32 values. The MLP does the same: the up projection
(hidden -> ffn) by columns, the down projection (ffn -> hidden) by rows, then an all-reduce. Per GPU:

    QKV  tokens x hidden      @ hidden x 3 hidden/N
    out  tokens x hidden/N    @ hidden/N x hidden        -> all-reduce tokens x hidden x 4 bytes
    up   tokens x hidden      @ hidden x ffn/N
    down tokens x ffn/N       @ ffn/N x hidden           -> all-reduce tokens x hidden x 4 bytes

The GEMMs are timed by the timing model (`gemm_cost`); the all-reduces are ring collectives on the node's
links; the runner overlaps what the streams allow. With `chunks` > 1 the tokens are cut into chunks on
alternate streams, so one chunk's all-reduce can run under the next chunk's GEMMs. Left out: the
attention scores (Q K^T, softmax, x V: per head, so split the same way with no communication), layer
norms, GeLU and residual adds (element-wise), and the NCCL kernel's own use of the SMs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from gpusim.analysis.gemm import gemm_cost
from gpusim.config import load_config
from gpusim.config.schema import Config
from gpusim.errors import GpusimError
from gpusim.system import Collective, Kernel, Program, run_program

FLOAT32 = 4


@dataclass(frozen=True, slots=True)
class LayerShape:
    """A transformer layer's sizes: tokens in the batch (batch x sequence), hidden width, MLP width."""

    tokens: int = 2048
    hidden: int = 512
    ffn_hidden: int = 2048

    def gemms(self, gpus: int, tokens: int) -> list[tuple[str, int, int, int]]:
        """(name, m, k, n) of each GPU's GEMMs, in order, for `tokens` tokens split over `gpus` GPUs."""
        for what, size in (("hidden", self.hidden), ("ffn_hidden", self.ffn_hidden)):
            if size % gpus:
                raise GpusimError(f"{what} {size} does not split over {gpus} GPUs")
        h, f = self.hidden, self.ffn_hidden
        return [("qkv", tokens, h, 3 * h // gpus), ("out", tokens, h // gpus, h),
                ("up", tokens, h, f // gpus), ("down", tokens, f // gpus, h)]


def layer_program(cfg: Config, shape: LayerShape, gpus: int, chunks: int = 1) -> tuple[Program, bool]:
    """The layer on GPUs 0..gpus-1 of `cfg`'s node, and whether any GEMM's cycles were extrapolated."""
    if shape.tokens % chunks:
        raise GpusimError(f"tokens {shape.tokens} do not split into {chunks} chunks")
    tokens = shape.tokens // chunks
    costs = {name: gemm_cost(cfg, m, k, n) for name, m, k, n in shape.gemms(gpus, tokens)}
    members = tuple(range(gpus))
    ops: list = []
    for c in range(chunks):
        stream = f"s{c % 2}"
        for half in (("qkv", "out"), ("up", "down")):
            for g in members:
                ops += [Kernel(name=f"{name} {c}", cycles=costs[name].cycles, gpu=g, stream=stream)
                        for name in half]
            if gpus > 1:
                ops.append(Collective(collective="all_reduce", bytes=tokens * shape.hidden * FLOAT32, gpus=members,
                                      stream=stream, name=f"all_reduce {half[1]} {c}"))
    program = Program(tuple(ops), name=f"transformer_layer_{gpus}gpu",
                      description=f"tensor-parallel transformer layer on {gpus} GPU(s)")
    return program, any(cost.extrapolated for cost in costs.values())


@dataclass(frozen=True, slots=True)
class ShardingRow:
    """One layer run: GPU 0's time computing, communicating and both at once, the layer's whole time and
    its speed-up over one GPU of the same node."""

    system: str
    interconnect: str
    gpus: int
    compute_seconds: float
    communication_seconds: float
    overlap_seconds: float
    total_seconds: float
    speedup: float
    extrapolated: bool


@dataclass(frozen=True)
class ShardingStudy:
    shape: LayerShape
    chunks: int
    rows: tuple[ShardingRow, ...]

    def row(self, system: str, gpus: int) -> ShardingRow:
        return next(r for r in self.rows if r.system == system and r.gpus == gpus)

    def to_dict(self) -> dict:
        return {"shape": asdict(self.shape), "chunks": self.chunks, "rows": [asdict(r) for r in self.rows]}

    def table(self) -> str:
        us = 1e6
        s = self.shape
        lines = [f"transformer layer: {s.tokens} tokens, hidden {s.hidden}, MLP {s.ffn_hidden}, {self.chunks} "
                 f"chunk(s); times of GPU 0 in us (* GEMM cycles extrapolated from smaller simulations)",
                 f"{'system':<14} {'interconnect':<12} {'GPUs':>4} {'compute':>10} {'comm':>10} {'overlap':>10} "
                 f"{'total':>10} {'speed-up':>8}"]
        for r in self.rows:
            lines.append(f"{r.system:<14} {r.interconnect:<12} {r.gpus:>4} {r.compute_seconds * us:>10,.1f} "
                         f"{r.communication_seconds * us:>10,.1f} {r.overlap_seconds * us:>10,.1f} "
                         f"{r.total_seconds * us:>10,.1f} {r.speedup:>7.2f}x{'*' if r.extrapolated else ''}")
        return "\n".join(lines)


def sharding_study(systems: Sequence[str | Config] = ("dgx_a100", "a100x8_pcie"), gpus: Sequence[int] = (1, 2, 4, 8),
                   shape: LayerShape = LayerShape(), chunks: int = 1) -> ShardingStudy:
    """The layer on 1, 2, 4, 8 (`gpus`) GPUs of each system config."""
    rows = []
    for system in systems:
        cfg = system if isinstance(system, Config) else load_config(system)
        base = None
        for n in gpus:
            if n > cfg.system.gpus:
                raise GpusimError(f"{cfg.name} has {cfg.system.gpus} GPUs (system.gpus), not {n}")
            program, extrapolated = layer_program(cfg, shape, n, chunks)
            report = run_program(program, cfg)
            busy = report.busy(0)
            base = base if base is not None else report.seconds
            rows.append(ShardingRow(cfg.name, cfg.system.gpu_interconnect, n, busy["compute"], busy["communication"],
                                    busy["overlap"], report.seconds, base / report.seconds, extrapolated))
    return ShardingStudy(shape, chunks, tuple(rows))

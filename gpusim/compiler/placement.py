"""Device placement: which operators of a graph run on a CPU design and which on a GPU, by a cost model
that counts the PCIe transfers a choice implies.

The cost model (a roofline per operator, the devices' figures from their configs):

    op time on a device  = launch + max(flops / peak, bytes / bandwidth)
    peak                 = Config.derived()["peak_fp32_gflops"] (lanes x cores or SMs x 2 x clock)
    bandwidth            = a GPU's dram.bandwidth_gbps x dram.efficiency; a CPU's sustained DRAM bandwidth
                           (cpu.dram_channels x cpu.dram_channel_gbps x cpu.dram_efficiency)
    launch               = launch.kernel_launch_overhead_ns (a CPU's thread-pool fork-join)
    transfer of b bytes  = pcie.latency_ns + b / (pcie.bandwidth_gbps x pcie.efficiency)   (the GPU's link)

`bytes` is what the operator reads and writes once (its inputs and output); an `embedding_bag` reads only
the rows it gathers (batch x bag rows of the table) and its indices. The graph's inputs arrive in host
memory and its outputs return there (as `gpusim compare --include-transfers` counts them): a GPU operator
reading a tensor that is in host memory (an input, or a CPU operator's result) waits for its copy, and a
CPU operator reading a GPU result for the copy back; each tensor crosses once each way at most. One-element
constants are immediates. Operators run one after another (no overlap of transfers with compute).

`place` minimises the total: every assignment when the graph has at most `exhaustive` operators, else
the better of all-CPU and all-GPU improved by moving one operator at a time while that helps.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node
from gpusim.config import Config

VIEWS = ("parameter", "constant", "reshape")


@dataclass(frozen=True, slots=True)
class Device:
    """A device's figures for the cost model: peak FLOP/s, bytes/s, launch seconds, and for a GPU its PCIe
    link (latency seconds, bytes/s)."""

    name: str
    host: bool
    peak: float
    bandwidth: float
    launch: float
    link_latency: float = 0.0
    link_bandwidth: float = math.inf

    @classmethod
    def of(cls, cfg: Config) -> Device:
        peak = cfg.derived()["peak_fp32_gflops"] * 1e9
        launch = cfg.launch.kernel_launch_overhead_ns * 1e-9
        if cfg.host.resident:
            from gpusim.cpu.model import cpu_spec, dram_bandwidth

            return cls(cfg.name, True, peak, dram_bandwidth(cpu_spec(cfg)), launch)
        return cls(cfg.name, False, peak, cfg.dram.bandwidth_gbps * 1e9 * cfg.dram.efficiency, launch,
                   cfg.pcie.latency_ns * 1e-9, cfg.pcie.bandwidth_gbps * 1e9 * cfg.pcie.efficiency)

    def transfer(self, nbytes: int) -> float:
        return 0.0 if self.host else self.link_latency + nbytes / self.link_bandwidth


def work(graph: Graph, node: Node) -> tuple[float, float]:
    """(flops, bytes) of one operator, for the roofline."""
    ins = [graph[i].type for i in node.inputs]
    out = node.type
    if node.op == "embedding_bag":
        table, ids = ins
        gathered = ids.size * table.shape[1] * table.numpy_dtype.itemsize
        return float(ids.size * table.shape[1]), float(ids.nbytes + gathered + out.nbytes)
    nbytes = float(sum(t.nbytes for t in ins) + out.nbytes)
    if node.op == "matmul":
        return 2.0 * out.size * ins[0].shape[-1], nbytes
    return float(sum(t.size for t in ins)), nbytes


@dataclass(frozen=True)
class Placement:
    """Each operator's device, its time there, the transfers, and the totals against all-CPU and all-GPU."""

    graph: str
    devices: tuple[str, ...]
    where: Mapping[str, str]
    op_seconds: Mapping[str, float]
    transfers: tuple[tuple[str, str, str, int, float], ...]   # (tensor, from, to, bytes, seconds)
    seconds: float
    alone: Mapping[str, float]                                # device -> everything on it

    def table(self, graph: Graph) -> str:
        us = 1e6
        lines = [f"placement of {self.graph} over {', '.join(self.devices)} (roofline per operator, PCIe "
                 "transfers counted; inputs start and outputs end in host memory)",
                 f"{'node':<8} {'op':<14} {'device':<12} {'us':>10}"]
        for name, device in self.where.items():
            lines.append(f"%{name:<7} {graph[name].op:<14} {device:<12} {self.op_seconds[name] * us:>10,.2f}")
        for tensor, src, dst, nbytes, s in self.transfers:
            lines.append(f"transfer %{tensor} {src} -> {dst}: {nbytes:,} B, {s * us:,.2f} us")
        alone = "; ".join(f"all on {d} {s * us:,.1f} us" for d, s in self.alone.items())
        lines.append(f"placed: {self.seconds * us:,.1f} us; {alone}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"graph": self.graph, "devices": list(self.devices), "where": dict(self.where),
                "op_seconds": dict(self.op_seconds), "seconds": self.seconds, "alone_seconds": dict(self.alone),
                "transfers": [{"tensor": t, "from": a, "to": b, "bytes": n, "seconds": s}
                              for t, a, b, n, s in self.transfers]}


def _evaluate(graph: Graph, ops: Sequence[Node], assign: Mapping[str, Device],
              times: Mapping[tuple[str, str], float]):
    """Total seconds of an assignment, the transfers it implies, and each operator's seconds."""
    host = "host"
    home: dict[str, str] = {}    # tensor -> where it is first produced ("host" for graph inputs)
    copies: dict[tuple[str, str], tuple[str, str, str, int, float]] = {}
    total = 0.0

    def source(name: str) -> str:
        while graph[name].op == "reshape":
            name = graph[name].inputs[0]
        return name

    def need(tensor: str, device: Device | None) -> None:
        t = source(tensor)
        node = graph[t]
        if node.op == "constant" and node.type.size == 1:
            return
        at = home.get(t, host)
        here = host if device is None or device.host else device.name
        if at == here or (t, here) in copies:
            return
        link = device if here != host else assign[t]   # the GPU end of the copy
        nbytes = node.type.nbytes
        copies[(t, here)] = (t, at, here, nbytes, link.transfer(nbytes))

    per_op = {}
    for node in ops:
        device = assign[node.name]
        for i in node.inputs:
            need(i, device)
        home[node.name] = "host" if device.host else device.name
        per_op[node.name] = times[(node.name, device.name)]
        total += per_op[node.name]
    for name in graph.outputs.values():
        if graph[source(name)].op not in ("parameter", "constant"):
            need(name, None)
    transfers = tuple(copies.values())
    return total + sum(c[4] for c in transfers), transfers, per_op


def place(graph: Graph, configs: Sequence[Config], *, exhaustive: int = 16) -> Placement:
    """The cheapest placement of `graph`'s operators over `configs` (module docstring)."""
    devices = [Device.of(c) for c in configs]
    if len(devices) < 2:
        raise CompilerError("--place needs two devices or more, e.g. cpu_8core,a100")
    ops = [n for n in graph.topo_order() if n.op not in VIEWS]
    times = {}
    for node in ops:
        flops, nbytes = work(graph, node)
        for d in devices:
            times[(node.name, d.name)] = d.launch + max(flops / d.peak, nbytes / d.bandwidth)

    def cost(choice: Sequence[Device]) -> float:
        return _evaluate(graph, ops, dict(zip((n.name for n in ops), choice, strict=True)), times)[0]

    if len(ops) <= exhaustive:
        best = min(itertools.product(devices, repeat=len(ops)), key=cost)
    else:
        best = min(([d] * len(ops) for d in devices), key=cost)
        improved = True
        while improved:
            improved = False
            for k, d in itertools.product(range(len(ops)), devices):
                trial = [*best[:k], d, *best[k + 1:]]
                if cost(trial) < cost(best) - 1e-15:
                    best, improved = trial, True
    assign = dict(zip((n.name for n in ops), best, strict=True))
    seconds, transfers, per_op = _evaluate(graph, ops, assign, times)
    alone = {d.name: cost([d] * len(ops)) for d in devices}
    return Placement(graph.name, tuple(d.name for d in devices), {n: d.name for n, d in assign.items()}, per_op,
                     transfers, seconds, alone)

"""A lowered kernel: the ISA program a template generated for one node, its launch, which tensors its
pointer parameters name, the template parameters it was generated with, and its work (what the cost
models read)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpusim.compiler.ir import Node
from gpusim.compiler.lower.asm import Asm
from gpusim.compiler.lower.region import Region
from gpusim.compiler.tensor import TensorType
from gpusim.config import Config
from gpusim.functional import Launch
from gpusim.isa import Program


@dataclass(frozen=True, slots=True)
class Work:
    """What a kernel does, counted when it is generated. Per thread: `instructions` by unit class (each
    weighted by how often it runs), `global_trips` and `shared_trips` (times it waits on global or
    shared loads), `barriers`. Over the whole launch: the bytes global loads and stores move between L1
    and L2 (whole sectors), `unique_load_bytes` (what each block reads at least once, summed over
    blocks: the L2 traffic when an L1 keeps a block's working set), `dram_bytes` (each tensor read once
    and the result written once) and useful `flops`; `tensor_fma`: per warp, the multiply-adds its mma
    instructions do, by input precision (f16, bf16, tf32, s8: what the config's tensor rates divide)."""

    instructions: Mapping[str, float]
    global_trips: float
    shared_trips: float
    barriers: float
    load_bytes: float
    store_bytes: float
    unique_load_bytes: float
    dram_bytes: float
    flops: float
    tensor_fma: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False)
class Kernel:
    """One kernel: `node` computed by `template` with `params`. `args` maps each pointer parameter of
    the program to the tensor (buffer) it names; `buffers` gives every such tensor's type; the kernel
    writes `output`."""

    name: str
    node: Node
    template: str
    params: Mapping[str, Any]
    source: str
    program: Program
    launch: Launch
    args: Mapping[str, str]
    buffers: Mapping[str, TensorType]
    output: str
    work: Work

    @property
    def signature(self) -> str:
        """A hash of what the kernel computes and how, whatever the node's name (for caches)."""
        body = self.source.split("\n", 1)[1]
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        """Name, node, template, parameters, launch and resources, as plain data."""
        return {"kernel": self.name, "node": self.node.name, "op": _op(self.node), "template": self.template,
                "params": dict(self.params), "grid": list(self.launch.grid), "block": list(self.launch.block),
                "regs_per_thread": self.program.regs_per_thread, "shared_bytes": self.program.shared_bytes}


def _op(node: Node) -> str:
    return f"fused.{node.attrs['kind']}" if node.op == "fused" else node.op


@dataclass(frozen=True, slots=True)
class Template:
    """A kernel template: its parameters' defaults for a region, their candidate values for a region on
    a config (the tuner's search space), and the generator; `generate` raises CompilerError for
    parameters that do not fit the region."""

    name: str
    default: Callable[[Region], dict[str, Any]]
    space: Callable[[Region, Config], dict[str, tuple]]
    generate: Callable[[Region, Mapping[str, Any], str], Kernel]


def kernel_params(region: Region) -> dict[str, str]:
    """The pointer parameter of each input buffer of a region: in0, in1, ... (the output is `out`)."""
    return {i.name: f"in{n}" for n, i in enumerate(region.buffers)}


def declare(e: Asm, region: Region) -> dict[str, str]:
    """Declare the region's pointer parameters (inputs, then `out`); returns input name -> parameter."""
    params = kernel_params(region)
    for p in (*params.values(), "out"):
        e.param(p)
    return params


def finish(e: Asm, region: Region, template: str, params: Mapping[str, Any], launch: Launch, *, flops: float,
           unique_load_bytes: float | None = None, tensor_fma: Mapping[str, float] | None = None) -> Kernel:
    """Assemble `e` into the Kernel of `region`."""
    source, program, counts = e.assemble()
    warps = launch.num_blocks * launch.warps_per_block()
    inputs = {i.buffer: i.type for i in region.buffers}
    node = region.node
    dram = sum(t.nbytes for t in inputs.values()) + node.type.nbytes
    load_bytes = e.load_bytes * warps
    work = Work(counts, e.round_trips["global"], e.round_trips["shared"], e.barriers, load_bytes,
                e.store_bytes * warps, load_bytes if unique_load_bytes is None else unique_load_bytes, dram, flops,
                dict(tensor_fma or {}))
    names = kernel_params(region)
    args = {names[i.name]: i.buffer for i in region.buffers}
    return Kernel(e.name, node, template, dict(params), source, program, launch, {**args, "out": node.name},
                  {**inputs, node.name: node.type}, node.name, work)

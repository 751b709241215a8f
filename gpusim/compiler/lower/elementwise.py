"""Element-wise kernels: any chain (or diamond) of element-wise and broadcast operators, fused or alone.

One thread computes `unroll` output elements a block apart (element (blockIdx * unroll + u) * block +
threadIdx), so every load and store of a warp is contiguous; it issues all its loads first, then
computes and stores, so the loads overlap. Broadcast operands are indexed from the output position
(expr.Indexer). Parameters: `block` (threads per block), `unroll` (elements per thread)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import Asm
from gpusim.compiler.lower.expr import Indexer, Values
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.region import Region
from gpusim.config import Config
from gpusim.functional import Launch

DEFAULT = {"block": 256, "unroll": 1}


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    blocks = tuple(b for b in (64, 128, 256, 512, 1024) if b <= cfg.sm.max_threads_per_block)
    return {"block": blocks, "unroll": (1, 2, 4, 8)}


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    block, unroll = int(params["block"]), int(params["unroll"])
    if block < 1 or unroll < 1:
        raise CompilerError(f"elementwise: block {block} and unroll {unroll} must be positive")
    shape = region.root.shape
    n = math.prod(shape)
    per_block = block * unroll
    e = Asm(name)
    names = declare(e, region)
    first = e.value("mad.lo.u32", "u32", "%ctaid.x", str(per_block), "%tid.x")
    points = []
    for u in range(unroll):
        i = e.value("add.u32", "u32", first, str(u * block)) if u else first
        inside = None if n % per_block == 0 else e.value("setp.lt.u32", "pred", i, str(n))
        values = Values(e, region, names, Indexer(e, shape, i), inside)
        values.prefetch()  # every element's loads first
        points.append((i, inside, values))
    for i, inside, values in points:
        e.store(e.address("out", i, region.root.dtype), values[region.root.name], region.root.dtype, guard=inside)
    launch = Launch.make(max(1, -(-n // per_block)), block)
    return finish(e, region, "elementwise", params, launch, flops=n * len(region.ops))


TEMPLATE = Template("elementwise", lambda region: dict(DEFAULT), space, generate)

"""Per-warp instruction streams: what each warp issued, in order, with its active mask and, for
memory instructions, the per-lane addresses. This is the functional model's output and the timing
model's input; it is produced block by block so that a long kernel is never held whole."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WARP = 32


@dataclass(frozen=True, slots=True)
class WarpStream:
    """One warp's issued instructions: `pcs[i]` with `masks[i]` (bit k: lane k active);
    `addresses[i]` holds 32 per-lane byte addresses (-1: lane not accessing) for memory
    instructions. Registers read and written come from `program.instructions[pc]`."""

    warp: int  # warp index within the block
    pcs: np.ndarray  # int32
    masks: np.ndarray  # uint32
    addresses: dict[int, np.ndarray]

    def __len__(self) -> int:
        return self.pcs.size


@dataclass(frozen=True, slots=True)
class BlockStream:
    block: int  # linear block id
    warps: tuple[WarpStream, ...]


class BatchRecorder:
    """Collects, step by step, which warps of a batch issued which pc with which masks."""

    def __init__(self, num_warps: int):
        self.steps: list[tuple[int, np.ndarray, np.ndarray, np.ndarray | None]] = []
        self.positions: np.ndarray | None = None  # executing lanes within [len(G), 32]; None: all
        self._pending_addr: np.ndarray | None = None

    def step(self, pc: int, G: np.ndarray, active: np.ndarray) -> None:
        masks = np.packbits(active, axis=1, bitorder="little").view(np.uint32).ravel()
        self.steps.append((pc, G.copy(), masks, None))

    def memory(self, addr: np.ndarray) -> None:
        pc, G, masks, _ = self.steps[-1]
        full = np.full(G.size * WARP, -1, dtype=np.int64)
        pos = self.positions if self.positions is not None else np.arange(addr.size)
        full[pos] = addr
        self.steps[-1] = (pc, G, masks, full.reshape(G.size, WARP))

    def blocks(self, program, first_block: int, nblocks: int, wpb: int):
        W = nblocks * wpb
        per_warp_pc: list[list[int]] = [[] for _ in range(W)]
        per_warp_mask: list[list[int]] = [[] for _ in range(W)]
        per_warp_addr: list[dict[int, np.ndarray]] = [{} for _ in range(W)]
        for pc, G, masks, addr in self.steps:
            for k, w in enumerate(G.tolist()):
                if addr is not None:
                    per_warp_addr[w][len(per_warp_pc[w])] = addr[k]
                per_warp_pc[w].append(pc)
                per_warp_mask[w].append(int(masks[k]))
        for blk in range(nblocks):
            warps = tuple(
                WarpStream(w - blk * wpb, np.asarray(per_warp_pc[w], dtype=np.int32),
                           np.asarray(per_warp_mask[w], dtype=np.uint32), per_warp_addr[w])
                for w in range(blk * wpb, (blk + 1) * wpb))
            yield BlockStream(first_block + blk, warps)

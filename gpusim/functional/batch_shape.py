"""What every batch of as many blocks of a launch has alike, made once per executor and shared read-only by its
batches (gpusim.functional.warps: WarpScheduler.batch_shape)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.functional.launch import Launch


@dataclass(frozen=True)
class BatchShape:
    """Each lane's block within the batch, which lanes exist, each lane's block's offset in the batch's
    shared memory, and the special registers that depend on the thread's place in its block only (as
    uint32 lane arrays, by name): every array read-only."""

    lane_block: np.ndarray
    exists: np.ndarray  # [W, warp_size] bool
    full_lanes: int
    smem_stride: int
    lane_smem: np.ndarray
    specials: dict[str, np.ndarray]


def batch_shape(launch: Launch, warp_size: int, nblocks: int, used_specials, shared_window: int) -> BatchShape:
    """The BatchShape of a batch of `nblocks` blocks of `launch` (`used_specials`: the special registers
    the kernel reads; `shared_window`: the bytes of a block's shared memory its addresses range over)."""
    WS = warp_size
    T = launch.threads_per_block
    wpb = launch.warps_per_block(WS)
    L = nblocks * wpb * WS
    lane = np.arange(L, dtype=np.int64)
    warp = lane // WS
    lane_block = warp // wpb  # block index within the batch
    tlin = (warp % wpb) * WS + (lane % WS)
    bx, by, _ = launch.block
    by_thread = {
        "%tid.x": lambda: tlin % bx, "%tid.y": lambda: (tlin // bx) % by, "%tid.z": lambda: tlin // (bx * by),
        "%laneid": lambda: lane % WS, "%warpid": lambda: warp % wpb,
        "%nwarpid": lambda: np.full(L, wpb), "WARP_SZ": lambda: np.full(L, WS),
        **{f"%ntid.{c}": (lambda i=i: np.full(L, launch.block[i])) for i, c in enumerate("xyz")},
        **{f"%nctaid.{c}": (lambda i=i: np.full(L, launch.grid[i])) for i, c in enumerate("xyz")},
    }
    specials = {name: make().astype(np.uint32) for name, make in by_thread.items() if name in used_specials}
    stride = -(-max(shared_window, 8) // 8) * 8
    exists = (tlin < T).reshape(-1, WS)
    shape = BatchShape(lane_block, exists, int(exists.sum()), stride, lane_block * stride, specials)
    for a in (shape.lane_block, shape.exists, shape.lane_smem, *specials.values()):
        a.flags.writeable = False
    return shape

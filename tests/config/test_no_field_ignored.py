"""No config field is accepted and then ignored: for every field of the schema, changing it changes a
result, is refused with an error, or docs/config.md says the field is informational.

The table FIELDS says, per field, what to change and which probes to look at; a new field is one more
row (the first test fails until it has one). A probe is a function of a Config returning something
comparable; a row passes when some probe's value differs between the base config and the changed one,
or when loading or probing the changed one raises a GpusimError."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gpusim
from gpusim.analysis.program import simulate_program
from gpusim.config import load_config
from gpusim.config.schema import all_field_paths
from gpusim.errors import GpusimError

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"
VOLATILE = ("wall_seconds", "exec_seconds", "config", "config_hash", "gpusim_version")

COPIES = """
description: copies both ways on two streams, pinned and pageable, beside a kernel
ops:
  - {op: copy_h2d, stream: a, bytes: 64 MiB, name: in}
  - {op: kernel, stream: a, cycles: 100000, name: k}
  - {op: copy_d2h, stream: a, bytes: 64 MiB, name: out}
  - {op: copy_h2d, stream: b, bytes: 8 MiB, pinned: false, name: pageable in}
  - {op: copy_d2h, stream: b, bytes: 8 MiB, name: out b}
"""
PEERS = """
description: a peer copy and an all-reduce over the node
ops:
  - {op: copy_p2p, stream: a, bytes: 64 MiB, gpu: 0, peer: 1, name: p2p}
  - {op: all_reduce, stream: a, bytes: 64 MiB, gpus: [0, 1, 2, 3], name: ar}
"""


def kernel(workload: str, **params):
    """The simulated result of a small workload run, without wall times and the config itself."""
    def probe(cfg):
        d = gpusim.simulate(workload, cfg, **params).to_dict()
        return json.dumps({k: v for k, v in d.items() if k not in VOLATILE}, sort_keys=True, default=str)
    probe.__name__ = f"kernel({workload})"
    return probe


def occupancy(block: int, regs: int, smem: int = 0):
    def probe(cfg):
        return repr(gpusim.occupancy(cfg, block, regs, smem))
    return probe


def measured_kernel(cfg):
    """A small saxpy as `gpusim validate --kernels` times it (kernel + the launch as events count it)."""
    from gpusim.analysis.kernel_validation import Pair, simulate_pair

    return simulate_pair(Pair("saxpy", "small", {"n": 4096, "block": 256}, 10.0), "saxpy", "sasm", cfg,
                         sample="off").simulated_us


def derived(cfg):
    return cfg.derived()


def program(text: str):
    def probe(cfg, tmp=[]):  # noqa: B006 - one file for the session
        if not tmp:
            import tempfile

            tmp.append(Path(tempfile.mkdtemp()) / "p.yaml")
            tmp[0].write_text(text)
        return json.dumps(simulate_program(tmp[0], cfg).to_dict(), sort_keys=True, default=str)
    return probe


SAXPY = kernel("saxpy", n=4096)
GEMM_F16 = kernel("gemm_mma", n=128, stages=2)
GEMM_TF32 = kernel("gemm_mma_tf32", n=128, stages=2)
GEMM_INT8 = kernel("gemm_mma_int8", n=128, stages=2)


def MMA_BF16(cfg):  # noqa: N802 - a probe, named as the others
    """Cycles of one warp's chain of 16 bf16 mma (no shipped workload computes in bf16): 32 cycles of latency each
    on the a100, 128 of tensor-core time at 16 FMA a cycle."""
    from gpusim.timing import GPU

    regs = "{%d0, %d1, %d2, %d3}, {%a0, %a1, %a2, %a3}, {%b0, %b1}, {%d0, %d1, %d2, %d3}"
    src = (".kernel k\n.reg .b32 %a<4>, %b<2>\n.reg .f32 %d<4>\n"
           + f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {regs}\n" * 16)
    prog = gpusim.assemble(src)
    launch = gpusim.Launch.make(1, 32)
    return GPU(cfg).run(prog, launch, gpusim.block_streams(prog, launch, {}, gpusim.GlobalMemory(), cfg=cfg)).cycles


def HALF_BROADCAST(cfg):  # noqa: N802 - a probe, named as the others
    """Cycles of 32 warps' chains of 128-bit shared loads, lanes 0-15 of each warp on one 16-byte address and
    16-31 on another: one wavefront a warp served whole, two served a half-warp at a time."""
    from gpusim.timing import GPU

    src = (".kernel k\n.shared .f32 buf[64]\n.reg .u32 %t, %a\n.reg .f32 %f<4>\nmov.u32 %t, %tid.x;\n"
           "shr.u32 %a, %t, 4;\nand.b32 %a, %a, 1;\nshl.b32 %a, %a, 5;\n"
           + "ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%a];\n" * 32)
    prog = gpusim.assemble(src)
    launch = gpusim.Launch.make(8, 1024)
    return GPU(cfg).run(prog, launch, gpusim.block_streams(prog, launch, {}, gpusim.GlobalMemory(), cfg=cfg)).cycles


REUSE = kernel("matmul_naive", n=32)  # loads that hit in L1 and L2
TILED = kernel("matmul_tiled", n=32)  # shared memory, barriers
BIG = kernel("matmul_naive", n=128)  # 192 KiB of data: overflows a small L2 or L1 (about a second)
SOFTMAX = kernel("softmax", rows=64)  # stores, then loads of what was stored
# one thread chasing pointers round 168 KiB, again and again: every load hits in an L1 of 184 KiB (a100's
# 192 KiB array less the 8 KiB carve-out of the blocks' reserved shared memory), and misses in one of 156
CHASE = kernel("pointer_chase", footprint=168 * 1024, stride=128, steps=3000)
DIVERGE = kernel("divergence", n=2048)
BANKS = kernel("shared_bank_conflict", n=1024, stride=32)
SCATTER = kernel("transpose_naive", rows=128, cols=128)  # every store writes a 32-byte sector in part
HIST = kernel("histogram", n=8192)  # global atomics (16 lanes on a bin) after shared ones
PATHS = kernel("diverge_paths", paths=4, iters=2)  # a warp's threads split and rejoin
DFMA = kernel("op_chain", op=5, ilp=8, iters=1)  # the FP64 pipe
def cpu(workload: str, **params):
    """The CPU model's result (gpusim/cpu) for a small workload run: cycles, bounds, levels, breakdown."""
    def probe(cfg):
        from gpusim.cpu import simulate_cpu

        r = simulate_cpu(workload, cfg, **params)
        return repr((r.cycles, r.seconds, r.dram_bytes, r.levels, r.prefetched, r.mispredictions, r.breakdown,
                     r.energy))
    probe.__name__ = f"cpu({workload})"
    return probe


CPU_STREAM = cpu("saxpy", n=4096)
CPU_STORES = cpu("vecadd", n=4096)
CPU_FMA = cpu("ffma_peak", n=64, iters=4)
CPU_SFU = cpu("sfu_peak", n=64, iters=2)
CPU_BRANCH = cpu("divergence", n=512, paths=8)
CPU_GATHER = cpu("embedding", n=512)
CPU_COPY = cpu("stream_copy", n=4096, grid=4)  # a store every few instructions
CPU_SCATTER = cpu("transpose_naive", rows=64, cols=64)  # strided stores: scatters
CPU_REUSE = cpu("matmul_naive", n=64)
CPU_L1_CHAIN = cpu("pointer_chase", footprint=4096, stride=64, steps=500)
CPU_CHASE = cpu("chase", n=300)
PROGRAM = program(COPIES)


def COMPARE_ENERGY(cfg):  # noqa: N802 - a probe, named as the others
    """`gpusim compare vecadd --include-transfers` at n = 1000: energy to solution, copies included."""
    from gpusim.analysis.compare import compare

    return repr(compare("vecadd", [cfg], [1000], include_transfers=True).points[0].energy_j)


PEER = program(PEERS)
# a copy of 512 KiB through gtx980's L2 cut to 16 KiB: its stores reach DRAM among its loads (row
# conflicts, turnarounds, write batches)
COPY = kernel("stream_copy", n=32 * 1024 * 4, grid=32, block=1024)
SMALL_L2 = {"l2.size_bytes": 4 * 128 * 16 * 2}
# and with one bank a channel, so that row switches (not the data buses) bound the copy
ONE_BANK = {**SMALL_L2, "dram.banks_per_channel": 1}
INFORMATIONAL = "informational"  # the docs' "used by" column says so

# field -> (overrides that change it (with what must change alongside), probes[, base config])
FIELDS: dict[str, tuple] = {
    "description": INFORMATIONAL,
    "chip.compute_capability": INFORMATIONAL,
    "chip.architecture": INFORMATIONAL,
    "chip.clock_mhz": ({"chip.clock_mhz": 1000}, [SAXPY]),
    "chip.gpcs": ({"chip.gpcs": 1}, []),
    "chip.sms_per_gpc": ({"chip.sms_per_gpc": 1}, []),
    "chip.sm_count": ({"chip.sm_count": 2}, [SAXPY]),
    "chip.max_grid_dims": ({"chip.max_grid_dims": [4, 1, 1]}, [SAXPY]),
    "chip.global_memory_bytes": ({"chip.global_memory_bytes": 4096}, [SAXPY]),
    "chip.copy_engines": ({"chip.copy_engines": 1}, [PROGRAM]),
    "sm.warp_size": ({"sm.warp_size": 16, "sm.max_warps_per_sm": 128}, [DIVERGE]),
    "sm.subpartitions": ({"sm.subpartitions": 2}, [SAXPY]),
    "sm.max_threads_per_block": ({"sm.max_threads_per_block": 128, "sm.max_block_dims": [128, 128, 64]}, [SAXPY]),
    "sm.max_block_dims": ({"sm.max_block_dims": [128, 128, 64]}, [SAXPY]),
    "sm.max_warps_per_sm": ({"sm.max_warps_per_sm": 32, "sm.max_threads_per_sm": 1024}, [occupancy(256, 16)]),
    "sm.max_threads_per_sm": ({"sm.max_threads_per_sm": 1024}, [occupancy(256, 16)]),  # moves max_warps_per_sm
    "sm.max_blocks_per_sm": ({"sm.max_blocks_per_sm": 1}, [occupancy(256, 16)]),
    "sm.registers_per_sm": ({"sm.registers_per_sm": 32768, "sm.max_registers_per_block": 32768},
                            [occupancy(256, 64)]),
    "sm.max_registers_per_thread": ({"sm.max_registers_per_thread": 32}, [occupancy(256, 64)]),
    "sm.max_registers_per_block": ({"sm.max_registers_per_block": 16384}, [occupancy(1024, 32)]),
    "sm.register_allocation_unit_size": ({"sm.register_allocation_unit_size": 1}, [occupancy(256, 33)]),
    "sm.register_allocation_granularity": INFORMATIONAL,
    "sm.shared_memory_per_sm_bytes": ({"sm.shared_memory_per_sm_bytes": 65536}, []),
    "sm.shared_memory_carveouts_bytes": ({"sm.shared_memory_carveouts_bytes": [102400, 167936]}, [BIG]),
    "sm.max_shared_memory_per_block_bytes": INFORMATIONAL,
    "sm.max_shared_memory_per_block_optin_bytes": ({"sm.max_shared_memory_per_block_bytes": 1024,
                                                    "sm.max_shared_memory_per_block_optin_bytes": 1024}, [TILED]),
    "sm.shared_memory_allocation_unit_bytes": ({"sm.shared_memory_allocation_unit_bytes": 8192},
                                               [occupancy(32, 16, 1000)]),
    "sm.reserved_shared_memory_per_block_bytes": ({"sm.reserved_shared_memory_per_block_bytes": 8192},
                                                  [occupancy(32, 16, 1000)]),
    "sm.l1_shared_combined_bytes": ({"sm.l1_shared_combined_bytes": 167936}, [CHASE]),
    "l1.size_bytes": ({"l1.size_bytes": 1024, "l1.ways": 1}, [REUSE], "gtx980", {"l1.caches_global_loads": True}),
    "l1.line_size_bytes": ({"l1.line_size_bytes": 64}, [REUSE]),
    "l1.sector_size_bytes": ({"l1.sector_size_bytes": 64}, [REUSE]),
    "l1.ways": ({"l1.ways": 1}, [REUSE], "gtx980", {"l1.caches_global_loads": True, "l1.size_bytes": 4096}),
    "l1.mshr_entries": ({"l1.mshr_entries": 1}, [REUSE]),
    "l1.hit_latency_cycles": ({"l1.hit_latency_cycles": 200}, [REUSE]),
    "l1.write_policy": INFORMATIONAL,
    "l1.replacement": ({"l1.replacement": "fifo"}, [REUSE], "gtx980",
                       {"l1.caches_global_loads": True, "l1.size_bytes": 4096, "l1.ways": 4}),
    "l1.write_allocate": ({"l1.write_allocate": True}, [SOFTMAX]),
    "l1.caches_global_loads": ({"l1.caches_global_loads": False}, [REUSE]),
    "shared_memory.banks": ({"shared_memory.banks": 16}, [BANKS]),
    "shared_memory.bank_width_bytes": ({"shared_memory.bank_width_bytes": 8}, [BANKS]),
    "shared_memory.latency_cycles": ({"shared_memory.latency_cycles": 200}, [BANKS]),
    "shared_memory.replay_cycles": ({"shared_memory.replay_cycles": 9}, [BANKS]),
    "shared_memory.atomic_replay_cycles": ({"shared_memory.atomic_replay_cycles": 50}, [HIST]),
    "shared_memory.wide_access_lanes": ({"shared_memory.wide_access_lanes": 0}, [HALF_BROADCAST]),
    "l2.size_bytes": ({"l2.size_bytes": 4 * 128 * 16 * 128}, [BIG], "gtx980", {"l2.size_bytes": 4 * 128 * 16 * 2}),
    "l2.ways": ({"l2.ways": 1}, [BIG], "gtx980", {"l2.size_bytes": 4 * 128 * 16 * 16}),  # L1 caches no loads
    "l2.line_size_bytes": ({"l2.line_size_bytes": 256}, [REUSE, SAXPY]),
    "l2.sector_size_bytes": ({"l2.sector_size_bytes": 64}, [REUSE, SAXPY]),
    "l2.slices": ({"l2.slices": 40}, [REUSE, SAXPY]),
    "l2.hit_latency_cycles": ({"l2.hit_latency_cycles": 900}, [REUSE, SAXPY]),
    "l2.slice_bandwidth_bytes_per_cycle": ({"l2.slice_bandwidth_bytes_per_cycle": 1}, [REUSE, SAXPY]),
    "l2.write_policy": ({"l2.write_policy": "write_through"}, [SAXPY]),
    "l2.replacement": ({"l2.replacement": "fifo"}, [REUSE], "gtx980",
                       {"l2.size_bytes": 2 * 128 * 16, "l2.slices": 2}),
    "interconnect.latency_cycles": ({"interconnect.latency_cycles": 100}, [SAXPY]),
    "interconnect.port_bytes_per_cycle": ({"interconnect.port_bytes_per_cycle": 1}, [SAXPY]),
    "interconnect.partition_latency_cycles": ({"interconnect.partition_latency_cycles": 300}, [SAXPY]),
    "interconnect.partition_bytes_per_cycle": ({"interconnect.partition_bytes_per_cycle": 1}, [SAXPY]),
    "interconnect.gpc_partitions": ({"interconnect.gpc_partitions": [1, 0, 0, 0, 1, 1, 1]}, [SAXPY]),
    "l2.partitions": ({"l2.partitions": 1}, [SAXPY]),
    "l2.rmw_sector_cycles": ({"l2.rmw_sector_cycles": 500}, [SCATTER]),
    "l2.partition_policy": ({"l2.partition_policy": "spill"}, [SOFTMAX]),
    "l2.atomic_op_cycles": ({"l2.atomic_op_cycles": 100}, [HIST]),
    "dram.technology": INFORMATIONAL,
    "dram.controllers": ({"dram.controllers": 1}, [SAXPY]),
    "dram.bus_width_bits": ({"dram.bus_width_bits": 1280}, [SAXPY]),  # moves bandwidth_gbps with it
    "dram.data_rate_mtps": ({"dram.data_rate_mtps": 100}, [SAXPY]),  # moves bandwidth_gbps with it
    "dram.bandwidth_gbps": ({"dram.bandwidth_gbps": 10}, [SAXPY]),
    "dram.latency_cycles": ({"dram.latency_cycles": 2000}, [SAXPY]),
    "dram.queue_depth": ({"dram.queue_depth": 1}, [COPY], "gtx980", ONE_BANK),
    "dram.efficiency": ({"dram.efficiency": 0.1}, [SAXPY]),
    "dram.interleave_bytes": ({"dram.interleave_bytes": 1 << 20}, [SAXPY]),
    "dram.scheduler": ({"dram.scheduler": "fcfs"}, [COPY], "gtx980", ONE_BANK),
    "dram.channels_per_controller": ({"dram.channels_per_controller": 1}, [SAXPY]),
    "dram.banks_per_channel": ({"dram.banks_per_channel": 1}, [SAXPY, BIG]),
    "dram.row_bytes": ({"dram.row_bytes": 64}, [SAXPY]),
    "dram.write_batch_requests": ({"dram.write_batch_requests": 1}, [COPY], "gtx980", SMALL_L2),
    "dram.t_rcd_ns": ({"dram.t_rcd_ns": 50}, [COPY], "gtx980", ONE_BANK),
    "dram.t_rp_ns": ({"dram.t_rp_ns": 100}, [COPY], "gtx980", ONE_BANK),
    "dram.t_ras_ns": ({"dram.t_ras_ns": 300}, [COPY], "gtx980", ONE_BANK),
    "dram.t_cl_ns": INFORMATIONAL,
    "dram.t_wtr_ns": ({"dram.t_wtr_ns": 200}, [COPY], "gtx980", SMALL_L2),
    "dram.t_rtw_ns": ({"dram.t_rtw_ns": 200}, [COPY], "gtx980", SMALL_L2),
    "dram.t_refi_ns": ({"dram.t_refi_ns": 500}, [SAXPY]),
    "dram.t_rfc_ns": ({"dram.t_rfc_ns": 400}, [SAXPY]),
    "scheduler.policy": ({"scheduler.policy": "lrr"}, [TILED, SAXPY]),
    "scheduler.issue_width": ({"scheduler.issue_width": 2}, [TILED, SAXPY]),
    "scheduler.active_warps_two_level": ({"scheduler.policy": "two_level", "scheduler.active_warps_two_level": 1},
                                         [TILED, SAXPY]),
    "launch.kernel_launch_overhead_ns": ({"launch.kernel_launch_overhead_ns": 100000}, [SAXPY]),
    "launch.block_dispatch_cycles": ({"launch.block_dispatch_cycles": 1000}, [SAXPY]),
    "launch.event_latency_ns": ({"launch.event_latency_ns": 100000}, [measured_kernel]),
    "pcie.generation": INFORMATIONAL,
    "pcie.lanes": INFORMATIONAL,
    "pcie.bandwidth_gbps": ({"pcie.bandwidth_gbps": 1}, [PROGRAM]),
    "pcie.latency_ns": ({"pcie.latency_ns": 1e6}, [PROGRAM]),
    "pcie.efficiency": ({"pcie.efficiency": 0.1}, [PROGRAM]),
    "pcie.full_duplex": ({"pcie.full_duplex": False}, [PROGRAM]),
    "nvlink.version": ({"nvlink.version": 0}, [PEER], "dgx_a100"),
    "nvlink.links": ({"nvlink.links": 2}, [PEER], "dgx_a100"),
    "nvlink.bandwidth_per_link_gbps": ({"nvlink.bandwidth_per_link_gbps": 1}, [PEER], "dgx_a100"),
    "nvlink.latency_ns": ({"nvlink.latency_ns": 1e6}, [PEER], "dgx_a100"),
    "nvlink.efficiency": ({"nvlink.efficiency": 0.1}, [PEER], "dgx_a100"),
    "host.memory_bandwidth_gbps": ({"host.memory_bandwidth_gbps": 0.5}, [PEER], "a100x8_pcie"),
    "host.memcpy_bandwidth_gbps": ({"host.memcpy_bandwidth_gbps": 0.5}, [PROGRAM]),
    "host.staging_buffer_bytes": ({"host.staging_buffer_bytes": 4096}, [PROGRAM]),
    "host.buffers": ({"host.buffers": "pageable"}, [PROGRAM]),
    "cpu.cores": ({"cpu.cores": 4}, [CPU_STREAM], "cpu_8core"),
    "cpu.smt_threads": ({"cpu.smt_threads": 1}, [CPU_STREAM], "cpu_8core"),
    "cpu.simd_lanes": ({"cpu.simd_lanes": 16}, [CPU_STREAM], "cpu_8core"),
    "cpu.dispatch_width": ({"cpu.dispatch_width": 1}, [CPU_FMA], "cpu_8core"),
    "cpu.rob_entries": ({"cpu.rob_entries": 16}, [CPU_STREAM], "cpu_8core"),
    "cpu.load_queue_entries": ({"cpu.load_queue_entries": 1}, [CPU_GATHER], "cpu_8core"),
    "cpu.store_queue_entries": ({"cpu.store_queue_entries": 1}, [CPU_STORES], "cpu_8core"),
    "cpu.fma_ports": ({"cpu.fma_ports": 1}, [CPU_FMA], "cpu_8core"),
    "cpu.alu_ports": ({"cpu.alu_ports": 1}, [CPU_BRANCH], "cpu_8core"),
    "cpu.load_ports": ({"cpu.load_ports": 1}, [CPU_STREAM], "cpu_8core",
                       {"cpu.dispatch_width": 16, "cpu.alu_ports": 16}),
    "cpu.store_ports": ({"cpu.store_ports": 1}, [CPU_COPY], "cpu_8core",
                        {"cpu.store_ports": 8, "cpu.dispatch_width": 16, "cpu.alu_ports": 16, "cpu.load_ports": 16}),
    "cpu.gather_lanes_per_cycle": ({"cpu.gather_lanes_per_cycle": 0.1}, [CPU_SCATTER], "cpu_8core"),
    "cpu.sfu_cycles": ({"cpu.sfu_cycles": 100}, [CPU_SFU], "cpu_8core"),
    "cpu.branch_mispredict_penalty_cycles": ({"cpu.branch_mispredict_penalty_cycles": 100}, [CPU_BRANCH], "cpu_8core"),
    "cpu.line_bytes": ({"cpu.line_bytes": 128}, [CPU_STREAM], "cpu_8core"),
    "cpu.l1_bytes": ({"cpu.l1_bytes": 1024}, [CPU_L1_CHAIN], "cpu_8core"),
    "cpu.l1_latency_cycles": ({"cpu.l1_latency_cycles": 10}, [CPU_L1_CHAIN], "cpu_8core"),
    "cpu.l1_fill_buffers": ({"cpu.l1_fill_buffers": 1}, [CPU_GATHER], "cpu_8core"),
    "cpu.l2_bytes": ({"cpu.l2_bytes": 2048}, [CPU_L1_CHAIN], "cpu_8core", {"cpu.l1_bytes": 1024}),
    "cpu.l2_latency_cycles": ({"cpu.l2_latency_cycles": 100}, [CPU_STREAM], "cpu_8core",
                              {"cpu.llc_latency_cycles": 400}),
    "cpu.l2_outstanding_misses": ({"cpu.l2_outstanding_misses": 1}, [CPU_STREAM], "cpu_8core"),
    "cpu.llc_bytes": ({"cpu.llc_bytes": 4096}, [CPU_REUSE], "cpu_8core", {"cpu.l1_bytes": 1024, "cpu.l2_bytes": 2048}),
    "cpu.llc_latency_cycles": ({"cpu.llc_latency_cycles": 400}, [CPU_REUSE], "cpu_8core"),
    "cpu.dram_channels": ({"cpu.dram_channels": 1}, [CPU_STREAM], "cpu_8core"),
    "cpu.dram_channel_gbps": ({"cpu.dram_channel_gbps": 1}, [CPU_STREAM], "cpu_8core"),
    "cpu.dram_efficiency": ({"cpu.dram_efficiency": 0.1}, [CPU_STREAM], "cpu_8core"),
    "cpu.dram_latency_ns": ({"cpu.dram_latency_ns": 500}, [CPU_CHASE], "cpu_8core"),
    "cpu.prefetch_max_stride_bytes": ({"cpu.prefetch_max_stride_bytes": 0}, [CPU_STREAM], "cpu_8core"),
    "host.resident": ({"host.resident": True}, [PROGRAM]),
    "system.gpus": ({"system.gpus": 2}, [PEER], "dgx_a100"),
    "system.gpu_interconnect": ({"system.gpu_interconnect": "pcie"}, [PEER], "dgx_a100"),
    "system.chunk_bytes": ({"system.chunk_bytes": 32 << 20}, [PEER], "a100x8_pcie"),
    "power.tdp_w": ({"power.tdp_w": 1}, [SAXPY]),
    "power.constant_w": ({"power.constant_w": 100}, [SAXPY]),
    "power.memory_static_w": ({"power.memory_static_w": 100}, [SAXPY]),
    "power.uncore_static_w": ({"power.uncore_static_w": 100}, [SAXPY]),
    "power.sm_static_w": ({"power.sm_static_w": 10}, [SAXPY]),
    "power.dvfs_clocks_mhz": ({"power.dvfs_clocks_mhz": [210, 1080, 2000]}, [SAXPY]),
    "power.dvfs_voltages_mv": ({"power.dvfs_voltages_mv": [700, 712, 1000]}, [SAXPY]),
    "power.instruction_pj": ({"power.instruction_pj": 1000}, [SAXPY]),
    "power.register_file_pj": ({"power.register_file_pj": 1000}, [SAXPY]),
    "power.fp32_op_pj": ({"power.fp32_op_pj": 1000}, [SAXPY]),
    "power.int_op_pj": ({"power.int_op_pj": 1000}, [SAXPY]),
    "power.fp64_op_pj": ({"power.fp64_op_pj": 1000}, [DFMA]),
    "power.sfu_op_pj": ({"power.sfu_op_pj": 1000}, [SOFTMAX]),
    "power.tensor_fma_pj": ({"power.tensor_fma_pj": 1000}, [GEMM_F16]),
    "power.control_op_pj": ({"power.control_op_pj": 1000}, [SAXPY]),
    "power.l1_sector_pj": ({"power.l1_sector_pj": 1000}, [REUSE]),
    "power.shared_wavefront_pj": ({"power.shared_wavefront_pj": 1000}, [TILED]),
    "power.noc_sector_pj": ({"power.noc_sector_pj": 1000}, [SAXPY]),
    "power.l2_sector_pj": ({"power.l2_sector_pj": 1000}, [SAXPY]),
    "power.dram_pj_per_bit": ({"power.dram_pj_per_bit": 100}, [SAXPY]),
    "power.dram_activate_nj": ({"power.dram_activate_nj": 100}, [SAXPY]),
    "power.pcie_pj_per_bit": ({"power.pcie_pj_per_bit": 100}, [COMPARE_ENERGY]),
    "cpu_power.tdp_w": ({"cpu_power.tdp_w": 200}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.uncore_static_w": ({"cpu_power.uncore_static_w": 50}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.core_static_w": ({"cpu_power.core_static_w": 5}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.dram_static_w": ({"cpu_power.dram_static_w": 10}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.instruction_pj": ({"cpu_power.instruction_pj": 1000}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.vector_fp_op_pj": ({"cpu_power.vector_fp_op_pj": 1000}, [CPU_FMA], "cpu_8core"),
    "cpu_power.l1_access_pj": ({"cpu_power.l1_access_pj": 1000}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.l2_line_pj": ({"cpu_power.l2_line_pj": 1000}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.llc_line_pj": ({"cpu_power.llc_line_pj": 1000}, [CPU_STREAM], "cpu_8core"),
    "cpu_power.dram_pj_per_bit": ({"cpu_power.dram_pj_per_bit": 100}, [CPU_STREAM], "cpu_8core"),
    "units.<class>.latency_cycles": ({"units.fp32.latency_cycles": 100}, [SAXPY]),
    "units.<class>.lanes_per_subpartition": ({"units.fp32.lanes_per_subpartition": 1}, [SAXPY]),
    # the tensor core's rate per precision: each variant of the tensor-core GEMM
    "units.<class>.f16_fma_per_cycle": ({"units.tensor.f16_fma_per_cycle": 64}, [GEMM_F16]),
    "units.<class>.bf16_fma_per_cycle": ({"units.tensor.bf16_fma_per_cycle": 16}, [MMA_BF16]),
    "units.<class>.tf32_fma_per_cycle": ({"units.tensor.tf32_fma_per_cycle": 32}, [GEMM_TF32]),
    "units.<class>.s8_fma_per_cycle": ({"units.tensor.s8_fma_per_cycle": 128}, [GEMM_INT8]),
    "units.<class>.divergence_cycles": ({"units.branch.divergence_cycles": 200}, [PATHS]),
    "opcodes.<opcode>.latency_cycles": ({"opcodes.ex2.latency_cycles": 100}, [SOFTMAX]),  # softmax's exp
    "opcodes.<opcode>.lanes_per_subpartition": ({"opcodes.ex2.lanes_per_subpartition": 1}, [SOFTMAX]),
}


def _used_by(field: str) -> str:
    """The 'used by' column of the field's row in docs/config.md, else the first line naming it."""
    lines = DOC.read_text().splitlines()
    for line in lines:
        if line.startswith(f"| `{field}` |"):
            return line.rstrip(" |").rsplit("|", 1)[-1]
    return next((line for line in lines if f"`{field}`" in line), "")


def test_every_schema_field_has_a_row():
    assert sorted(set(all_field_paths()) - set(FIELDS)) == []
    assert sorted(set(FIELDS) - set(all_field_paths())) == []


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_changing_a_field_changes_something(field):
    row = FIELDS[field]
    if row == INFORMATIONAL:
        used_by = _used_by(field)
        assert re.search(r"\binformational\b", used_by), f"{field}: docs/config.md's 'used by' does not say so"
        return
    overrides, probes, *rest = row
    base = rest[0] if rest else "a100"
    base_overrides = rest[1] if len(rest) > 1 else {}
    cfg = load_config(base, overrides=base_overrides or None)
    before = [probe(cfg) for probe in probes]  # the base config must run every probe
    try:
        changed = load_config(base, overrides={**base_overrides, **overrides})
        if any(probe(changed) != b for probe, b in zip(probes, before, strict=True)):
            return
    except GpusimError:
        return  # refused: not ignored
    pytest.fail(f"{field}: {overrides} on {base} changed none of {[getattr(p, '__name__', p) for p in probes]}")


def test_the_tensor_unit_class_is_documented_as_optional():
    text = " ".join(DOC.read_text().split())
    assert re.search(r"`tensor` \(optional: a GPU without it, the GTX 980, refuses `mma`", text)



@pytest.mark.parametrize(("base", "smem", "carve"), [("a100", 0, 8192), ("a100", 6000, 65536), ("a100", 40000, 167936)])
def test_on_unified_designs_l1_is_the_array_less_the_launchs_carve_out(base, smem, carve):
    """L1 = sm.l1_shared_combined_bytes less the smallest carve-out that holds the resident blocks' shared
    memory (reserved bytes included), as the driver sets it on Volta and later; l1.size_bytes is then
    informational. 256-thread blocks: 8 resident with 1 KiB reserved each (8 KiB), with 6000 + 1024 bytes
    (55 KiB: the 64 KiB carve-out), or 4 with 40000 + 1024 (160.5 KiB: the largest, 164 KiB)."""
    from gpusim.timing.gpu import l1_size

    cfg = load_config(base)
    occ = gpusim.occupancy(cfg, 256, 16, smem)
    assert l1_size(cfg, occ) == cfg.sm.l1_shared_combined_bytes - carve
    bigger = load_config(base, overrides={"sm.l1_shared_combined_bytes": cfg.sm.l1_shared_combined_bytes + 16384})
    assert l1_size(bigger, occ) == l1_size(cfg, occ) + 16384
    assert l1_size(load_config(base, overrides={"l1.size_bytes": 65536}), occ) == l1_size(cfg, occ)


def test_on_separate_designs_l1_is_l1_size_bytes():
    from gpusim.timing.gpu import l1_size

    cfg = load_config("gtx980")
    assert cfg.sm.l1_shared_combined_bytes == 0
    assert l1_size(cfg, gpusim.occupancy(cfg, 256, 16, 40000)) == cfg.l1.size_bytes

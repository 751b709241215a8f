"""The hardware configuration schema: typed, frozen dataclasses, one per YAML section.

Every field carries metadata the loader validates against and `docs/config.md` documents:

- ``unit``: the unit of the value (also spelled in the field name, gem5 style: ``clock_mhz``);
- ``range``: inclusive ``(min, max)``, either end ``None`` for open;
- ``choices``: the allowed values of an enumerated string;
- ``length``: the exact length of a tuple field;
- ``doc``: one line saying what the field means and which model reads it.

Cross-field consistency rules (``sm_count <= gpcs * sms_per_gpc`` and the like) live in
`gpusim.config.loader`, next to the code that knows each field's file and line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpusim.config.vocab import (
    DRAM_SCHEDULER_DOCS,
    DRAM_SCHEDULERS,
    OPCODE_NAMES,
    REPLACEMENT_POLICIES,
    SCHEDULER_POLICIES,
    SCHEDULER_POLICY_DOCS,
)

INT32_MAX = 2**31 - 1


def spec(doc: str, unit: str = "", range: tuple | None = None, choices: tuple | None = None,
         length: int | None = None, **kw: Any):
    """A dataclass field with the metadata the loader validates and the docs print."""
    return field(metadata={"doc": doc, "unit": unit, "range": range, "choices": choices,
                           "length": length}, **kw)


# ----------------------------------------------------------------------------------------------
# chip


@dataclass(frozen=True, slots=True)
class ChipSpec:
    """The whole die as sold: clocks, SM count, grid limits. Read by the launcher and the timing model."""

    compute_capability: str = spec("CUDA compute capability as 'major.minor' (quote it in YAML: \"8.0\")")
    architecture: str = spec("marketing name of the architecture (Maxwell, Ampere, ...); informational")
    clock_mhz: float = spec("SM (boost) clock; converts cycles to seconds everywhere", "MHz", (1, 10000))
    gpcs: int = spec("graphics processing clusters enabled on the chip", "count", (1, 64))
    sms_per_gpc: int = spec("maximum SMs in one GPC (with all TPCs enabled)", "count", (1, 64))
    sm_count: int = spec("SMs enabled on the product; the dispatcher places blocks on these", "count",
                         (1, 1024))
    max_grid_dims: tuple[int, ...] = spec("maximum grid size (x, y, z) in blocks; launch validation",
                                          "blocks", (1, INT32_MAX), length=3)
    global_memory_bytes: int = spec("device memory capacity; the functional memory model's limit", "bytes",
                                    (1, 2**50))
    copy_engines: int = spec("DMA copy engines moving data between host and device memory; copies on "
                             "different engines run at once (H2D beside D2H needs two)", "count", (1, 64))


# ----------------------------------------------------------------------------------------------
# sm


@dataclass(frozen=True, slots=True)
class SMSpec:
    """One SM's resource limits, as the CUDA occupancy calculator and the block dispatcher see them."""

    warp_size: int = spec("threads per warp", "threads", (1, 64))
    subpartitions: int = spec("processing blocks (SMSPs) per SM, each with a warp scheduler, a register-"
                              "file bank and its own execution units", "count", (1, 16))
    max_threads_per_block: int = spec("largest block a launch may ask for", "threads", (1, 4096))
    max_block_dims: tuple[int, ...] = spec("largest block size (x, y, z)", "threads", (1, 4096), length=3)
    max_warps_per_sm: int = spec("resident warp slots per SM (occupancy's denominator)", "warps", (1, 256))
    max_threads_per_sm: int = spec("resident threads per SM; equals max_warps_per_sm * warp_size",
                                   "threads", (1, 8192))
    max_blocks_per_sm: int = spec("resident blocks (CTA slots) per SM", "blocks", (1, 256))
    registers_per_sm: int = spec("32-bit registers in the SM's register file", "registers", (1, 2**20))
    max_registers_per_thread: int = spec("largest per-thread register count a kernel may use", "registers",
                                         (1, 1024))
    max_registers_per_block: int = spec("registers one block may hold", "registers", (1, 2**20))
    register_allocation_unit_size: int = spec("registers are allocated to a warp in multiples of this",
                                              "registers", (1, 4096))
    register_allocation_granularity: str = spec("what registers are allocated to ('warp' since cc 2.0)",
                                                choices=("warp", "block"))
    shared_memory_per_sm_bytes: int = spec("largest shared-memory carve-out usable by blocks on one SM "
                                           "(the largest entry of shared_memory_carveouts_bytes)", "bytes",
                                           (0, 2**24))
    shared_memory_carveouts_bytes: tuple[int, ...] = spec(
        "shared-memory sizes the unified L1/shared array can be configured to, ascending; a single entry "
        "where shared memory is a separate array", "bytes", (0, 2**24))
    max_shared_memory_per_block_bytes: int = spec("static shared-memory limit of one block (no opt-in)",
                                                  "bytes", (0, 2**24))
    max_shared_memory_per_block_optin_bytes: int = spec(
        "dynamic shared-memory limit of one block after cudaFuncSetAttribute opt-in", "bytes", (0, 2**24))
    shared_memory_allocation_unit_bytes: int = spec("shared memory is allocated to a block in multiples "
                                                    "of this", "bytes", (1, 65536))
    reserved_shared_memory_per_block_bytes: int = spec("shared memory the driver reserves per block "
                                                       "(1 KB since cc 8.0)", "bytes", (0, 65536))
    l1_shared_combined_bytes: int = spec("size of the unified L1-data/shared-memory array; 0 where L1 and "
                                         "shared memory are separate arrays (Maxwell)", "bytes", (0, 2**24))


# ----------------------------------------------------------------------------------------------
# execution units


@dataclass(frozen=True, slots=True)
class UnitSpec:
    """One execution-unit class of a sub-partition (FP32, INT, FP64, SFU, LDST, BRANCH, SYNC, TENSOR)."""

    latency_cycles: int = spec("cycles from issue until a dependent instruction may issue", "cycles",
                               (0, 10000))
    lanes_per_subpartition: int = spec("lanes the unit processes per cycle in one sub-partition; a 32-"
                                       "thread warp occupies it ceil(32 / lanes) cycles (the tensor unit: "
                                       "the *_fma_per_cycle fields instead)", "lanes", (1, 1024))
    f16_fma_per_cycle: int = spec("units.tensor only (required there): dense f16 multiply-adds one sub-"
                                  "partition's tensor core completes per cycle (f32 accumulate); an mma of "
                                  "M x N x K holds it ceil(M*N*K / this) cycles", "FMA/cycle", (1, 1 << 20),
                                  default=None)
    bf16_fma_per_cycle: int = spec("units.tensor only: as f16_fma_per_cycle for bf16 inputs", "FMA/cycle",
                                   (1, 1 << 20), default=None)
    tf32_fma_per_cycle: int = spec("units.tensor only: as f16_fma_per_cycle for tf32 inputs", "FMA/cycle",
                                   (1, 1 << 20), default=None)
    s8_fma_per_cycle: int = spec("units.tensor only: as f16_fma_per_cycle for 8-bit integer inputs (s32 "
                                 "accumulate)", "FMA/cycle", (1, 1 << 20), default=None)
    divergence_cycles: int = spec("units.branch only (optional, default 0): cycles a warp loses each time its "
                                  "set of active threads changes at a branch or a reconvergence point (the "
                                  "split of a divergent branch, the switch to its other side, the rejoin: "
                                  "SASS's BSSY/BSYNC convergence barrier); a change where threads exit is free",
                                  "cycles", (0, 100000), default=None)

    def fma_per_cycle(self, precision: str) -> int:
        """Tensor-core multiply-adds per cycle per sub-partition for inputs of `precision` (f16, bf16,
        tf32, s8 or u8)."""
        return getattr(self, f"{'s8' if precision == 'u8' else precision}_fma_per_cycle")


TENSOR_FIELDS = ("f16_fma_per_cycle", "bf16_fma_per_cycle", "tf32_fma_per_cycle", "s8_fma_per_cycle")
# fields only one unit class has (left out of the others): the field -> its unit class
UNIT_FIELD_OWNER = {**{f: "tensor" for f in TENSOR_FIELDS}, "divergence_cycles": "branch"}
UNIT_ONLY_FIELDS = tuple(UNIT_FIELD_OWNER)

UNIT_CLASSES = ("fp32", "int", "fp64", "sfu", "ldst", "branch", "sync")
OPTIONAL_UNIT_CLASSES = ("tensor",)


@dataclass(frozen=True, slots=True)
class OpcodeSpec:
    """One opcode's own latency and throughput (`opcodes.<opcode>`), where it differs from its unit
    class's: `rsqrt` and `sin` both run on the SFU, but not in the same number of cycles. A field left
    out (None) takes the figure of the unit the instruction runs on (`units.<class>`)."""

    latency_cycles: int = spec("cycles from issue until a dependent instruction may issue, for this opcode; "
                               "default: its unit's latency_cycles", "cycles", (0, 10000), default=None)
    lanes_per_subpartition: int = spec("lanes of its unit this opcode uses per cycle in one sub-partition (a "
                                       "32-thread warp holds the unit's issue port ceil(32 / lanes) cycles); "
                                       "default: its unit's lanes_per_subpartition", "lanes", (1, 1024),
                                       default=None)


OPCODES = OPCODE_NAMES  # the names `opcodes:` may list (gpusim/config/vocab.py, checked against the ISA)


# ----------------------------------------------------------------------------------------------
# memory hierarchy


@dataclass(frozen=True, slots=True)
class L1Spec:
    """The per-SM L1 data cache. Read by the timing model's coalescer and `timing/l1.py`."""

    size_bytes: int = spec("L1 data-cache capacity where L1 and shared memory are separate arrays; on "
                           "unified designs (sm.l1_shared_combined_bytes > 0) the timing model gives L1 what "
                           "the kernel's shared-memory carve-out leaves, and this is informational", "bytes",
                           (0, 2**24))
    line_size_bytes: int = spec("cache line (tag) size", "bytes", (16, 1024))
    sector_size_bytes: int = spec("fill/transfer granularity; a line has line/sector sectors", "bytes",
                                  (4, 1024))
    ways: int = spec("associativity; sets = size / (line * ways)", "ways", (1, 1024))
    mshr_entries: int = spec("outstanding misses (distinct lines) the L1 can track", "entries", (1, 65536))
    hit_latency_cycles: int = spec("load-to-use latency of an L1 hit", "cycles", (1, 10000))
    write_policy: str = spec("what a store does to the L1; informational: the timing model's L1 writes every "
                             "store through to the L2 (as NVIDIA's L1s do)", choices=("write_through", "write_back"))
    write_allocate: bool = spec("whether a store miss allocates a line")
    caches_global_loads: bool = spec("whether global loads are cached in L1 by default (false on GM204: "
                                     "global loads go to L2 unless compiled with -dlcm=ca)")
    replacement: str = spec("replacement policy (gpusim/timing/policies/replacement_*.py); default lru",
                            choices=REPLACEMENT_POLICIES, default="lru")


@dataclass(frozen=True, slots=True)
class SharedMemorySpec:
    """The per-SM shared memory (scratchpad). Read by `timing/shared_memory.py` (bank conflicts)."""

    banks: int = spec("independent banks; accesses to distinct words of one bank serialise", "banks",
                      (1, 1024))
    bank_width_bytes: int = spec("bytes one bank delivers per cycle", "bytes", (1, 64))
    latency_cycles: int = spec("load-to-use latency of a conflict-free shared-memory load", "cycles",
                               (1, 10000))
    replay_cycles: int = spec("cycles each wavefront after the first adds to the latency of a conflicted access "
                              "(its replays; the pipe serves other warps' wavefronts in between, so under load "
                              "it still takes one a cycle); default 1", "cycles", (1, 1000), default=1)
    atomic_replay_cycles: int = spec("cycles the pipe spends on each pass of a shared-memory atomic after its "
                                     "first: a pass per distinct address that shares a bank with another (each "
                                     "a read-modify-write of the bank), lanes on one address combined into one "
                                     "update; default 1", "cycles", (1, 1000), default=1)
    wide_access_lanes: int = spec("lanes whose 128-bit (16-byte) accesses the banks serve together: a warp's "
                                  "128-bit access is served this many lanes at a time, each group taking its "
                                  "busiest bank's distinct words in wavefronts (a broadcast shares a word only "
                                  "within its group); 0: the whole warp at once; default 0", "lanes", (0, 1024),
                                  default=0)


@dataclass(frozen=True, slots=True)
class L2Spec:
    """The chip-wide L2, split into slices. Read by `timing/l2.py` and the interconnect."""

    size_bytes: int = spec("total L2 capacity", "bytes", (0, 2**34))
    ways: int = spec("associativity of one slice", "ways", (1, 1024))
    line_size_bytes: int = spec("cache line size", "bytes", (16, 1024))
    sector_size_bytes: int = spec("fill/transfer granularity towards DRAM", "bytes", (4, 1024))
    slices: int = spec("independent slices (banks), addresses interleaved over them", "slices", (1, 4096))
    hit_latency_cycles: int = spec("load-to-use latency of an L2 hit, as seen from an SM", "cycles",
                                   (1, 100000))
    slice_bandwidth_bytes_per_cycle: int = spec("bytes one slice returns per SM cycle; the L2 roof is "
                                                "slices times this", "bytes/cycle", (1, 65536))
    write_policy: str = spec("what a store does to the L2", choices=("write_through", "write_back"))
    replacement: str = spec("replacement policy of every slice (gpusim/timing/policies/replacement_*.py); "
                            "default lru", choices=REPLACEMENT_POLICIES, default="lru")
    partitions: int = spec("partitions the slices split into, evenly in slice order; an SM's requests go to "
                           "its near partition, which also keeps copies of lines whose home (by address) is "
                           "a far one; default 1", "count", (1, 64), default=1)
    partition_policy: str = spec("what the partitions hold (with partitions > 1): `home` - every line lives in its "
                                 "home partition (by address), the near partition keeps copies of far-homed lines "
                                 "it reads; `spill` - lines are cached in the partition of the SMs that use them "
                                 "(a read that misses there finds them in another partition, or DRAM), a "
                                 "partition's victims spill into the next one, writes and atomics invalidate the "
                                 "other partitions' copies (a crossing each way); default home",
                                 choices=("home", "spill"), default="home")
    rmw_sector_cycles: float = spec("cycles a slice's data port is held by a read-modify-write of one sector: "
                                    "a store that writes only part of the sector (merged into it; the ECC "
                                    "granule is the sector) or an atomic's update of it; 0: as a full sector's "
                                    "transfer", "cycles", (0, 10000), default=0.0)
    atomic_op_cycles: float = spec("cycles between two lanes of one atomic on the same address (the slice "
                                   "applies them one after another); default 1", "cycles", (0, 10000), default=1.0)


@dataclass(frozen=True, slots=True)
class InterconnectSpec:
    """The crossbar between the SMs and the L2 slices. Read by `timing/interconnect.py`. Optional: both
    fields default to 0, where the L2's hit latency and slice bandwidth, measured from the SM, already
    include the crossbar."""

    latency_cycles: int = spec("cycles a request takes to reach its L2 slice, and its reply to come back "
                               "(each way), on top of l2.hit_latency_cycles", "cycles", (0, 100000), default=0)
    port_bytes_per_cycle: int = spec("bytes the crossbar delivers from one slice to the SMs per cycle "
                                     "(a FIFO port per slice); 0: no limit beyond the slices' own ports",
                                     "bytes/cycle", (0, 65536), default=0)
    partition_latency_cycles: int = spec("cycles a request missing its near L2 partition takes to cross to "
                                         "the line's far home partition, and its reply to come back (each way)",
                                         "cycles", (0, 100000), default=0)
    partition_bytes_per_cycle: int = spec("bytes the link between L2 partitions carries towards one partition "
                                          "per cycle (a FIFO port per receiving partition); 0: no limit",
                                          "bytes/cycle", (0, 1 << 20), default=0)
    gpc_partitions: tuple[int, ...] = spec("the L2 partition near each GPC (chip.gpcs entries; SM s is in GPC "
                                           "s // chip.sms_per_gpc); default: GPCs split evenly in order",
                                           "partition", (0, 63), default=())


@dataclass(frozen=True, slots=True)
class DramSpec:
    """Device memory. Read by `timing/dram.py` (controllers, channels, banks and rows; the DRAM timings in ns)
    and the roofline."""

    technology: str = spec("memory technology; informational (GDDR5, HBM2, DDR5, ...)")
    controllers: int = spec("memory controllers (channels) addresses are interleaved over", "count",
                            (1, 1024))
    bus_width_bits: int = spec("total data-bus width over all controllers", "bits", (1, 65536))
    data_rate_mtps: float = spec("transfers per second per pin", "MT/s", (1, 100000))
    bandwidth_gbps: float = spec("peak bandwidth; must equal bus_width_bits / 8 * data_rate_mtps / 1000 "
                                 "within 1%", "GB/s", (0.001, 100000))
    latency_cycles: int = spec("unloaded load-to-use latency of a DRAM access (L2 miss), in SM cycles",
                               "cycles", (1, 100000))
    queue_depth: int = spec("requests one controller holds; under fr_fcfs, the most row hits that may overtake "
                            "a waiting row switch in one bank", "requests", (1, 65536))
    efficiency: float = spec("fraction of the data bus's peak left after what the bank model does not "
                             "cover (command-bus slots, ECC); scales each channel's transfer rate", "fraction",
                             (0.01, 1.0))
    interleave_bytes: int = spec("address-interleaving granularity across controllers", "bytes",
                                 (32, 2**20))
    scheduler: str = spec("request scheduling policy of each controller (gpusim/timing/policies/dram_*.py): "
                          + "; ".join(f"{k}: {v}" for k, v in DRAM_SCHEDULER_DOCS.items()) + "; default fr_fcfs",
                          choices=DRAM_SCHEDULERS, default="fr_fcfs")
    channels_per_controller: int = spec("independent channels (HBM pseudo-channels, GDDR5 x32 channels) of "
                                        "one controller, each with its own data bus and banks", "count",
                                        (1, 64), default=1)
    banks_per_channel: int = spec("banks of one channel, each with one open row", "banks", (1, 1024), default=16)
    row_bytes: int = spec("bytes of one row (page) of one bank, as the channel addresses it", "bytes",
                          (32, 1 << 20), default=2048)
    write_batch_requests: int = spec("write-backs a channel groups (its write queue): its bus turns from reads to "
                                     "writes and back once a batch; 1: every write", "requests", (1, 4096),
                                     default=1)
    t_rcd_ns: float = spec("activate to read/write (row to column delay)", "ns", (0, 1000), default=0.0)
    t_rp_ns: float = spec("precharge to activate (closing a row)", "ns", (0, 1000), default=0.0)
    t_ras_ns: float = spec("activate to precharge, the least time a row stays open", "ns", (0, 1000),
                           default=0.0)
    t_cl_ns: float = spec("read command to first data (CAS latency)", "ns", (0, 1000), default=0.0)
    t_wtr_ns: float = spec("end of write data to the next read command on the channel (write-to-read "
                           "turnaround)", "ns", (0, 1000), default=0.0)
    t_rtw_ns: float = spec("end of read data to the next write data on the channel (read-to-write "
                           "turnaround)", "ns", (0, 1000), default=0.0)
    t_refi_ns: float = spec("refresh interval of each bank (the banks staggered over it); 0: no refresh", "ns",
                            (0, 1e6), default=0.0)
    t_rfc_ns: float = spec("refresh cycle time: a bank is busy this long once every t_refi_ns (modelled by "
                           "its average)",
                           "ns", (0, 1e5), default=0.0)


# ----------------------------------------------------------------------------------------------
# scheduling and launch


@dataclass(frozen=True, slots=True)
class SchedulerSpec:
    """Warp schedulers, one per sub-partition. Read by `timing/subpartition.py` and `timing/policies/`."""

    policy: str = spec("warp selection policy (gpusim/timing/policies/scheduler_*.py): "
                       + "; ".join(f"{k}: {v}" for k, v in SCHEDULER_POLICY_DOCS.items()), choices=SCHEDULER_POLICIES)
    issue_width: int = spec("instructions one scheduler may issue per cycle", "instructions/cycle",
                            (1, 8))
    active_warps_two_level: int = spec("size of the active set when policy is two_level", "warps",
                                       (1, 256))


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """Kernel launch costs. Read by the host model and the block dispatcher."""

    kernel_launch_overhead_ns: float = spec("host-side time from launch call to the first block running",
                                            "ns", (0, 1e9))
    block_dispatch_cycles: int = spec("cycles to place one block on an SM", "cycles", (0, 100000))
    event_latency_ns: float = spec(
        "what a pair of CUDA events recorded around one launch adds to the kernel's own time: the launch "
        "reaching the GPU and its first block, and the completion reaching the second event (`gpusim "
        "validate --kernels` adds it to every simulated kernel); default kernel_launch_overhead_ns", "ns",
        (0, 1e9), default=None)

    @property
    def event_ns(self) -> float:
        """`event_latency_ns`, or the launch overhead where the config gives none."""
        return self.kernel_launch_overhead_ns if self.event_latency_ns is None else self.event_latency_ns


# ----------------------------------------------------------------------------------------------
# links


@dataclass(frozen=True, slots=True)
class PcieSpec:
    """The host link. Read by `system/pcie.py` (copies)."""

    generation: int = spec("PCI Express generation", "generation", (1, 7))
    lanes: int = spec("link width", "lanes", (1, 32))
    bandwidth_gbps: float = spec("usable bandwidth per direction", "GB/s", (0.001, 10000))
    latency_ns: float = spec("one-way latency of a transfer", "ns", (0, 1e9))
    efficiency: float = spec("fraction of bandwidth_gbps a large DMA transfer achieves (packet headers, "
                             "flow control, DMA setup)", "fraction", (0.01, 1.0))
    full_duplex: bool = spec("whether the two directions carry traffic at once (PCIe does); false makes "
                             "H2D and D2H share one channel")


@dataclass(frozen=True, slots=True)
class NvlinkSpec:
    """GPU-to-GPU links. Read by `system/nvlink.py`; links 0 means none (GeForce parts)."""

    version: int = spec("NVLink generation; 0 with no links", "generation", (0, 10))
    links: int = spec("links per GPU", "links", (0, 64))
    bandwidth_per_link_gbps: float = spec("bandwidth of one link, both directions together", "GB/s",
                                          (0, 10000))
    latency_ns: float = spec("one-way latency of a transfer", "ns", (0, 1e9))
    efficiency: float = spec("fraction of the links' bandwidth a large transfer achieves", "fraction",
                             (0.01, 1.0))


# ----------------------------------------------------------------------------------------------
# host and multi-GPU system


@dataclass(frozen=True, slots=True)
class HostSpec:
    """The host the GPU is plugged into: its memory and how copies reach it. Read by `system/host.py`."""

    memory_bandwidth_gbps: float = spec("host DRAM bandwidth, shared by all GPU traffic staged through host "
                                        "memory (GPU-to-GPU copies over PCIe)", "GB/s", (0.001, 100000))
    memcpy_bandwidth_gbps: float = spec("rate of the driver's CPU memcpy between a pageable buffer and a "
                                        "pinned staging buffer (one thread, well below the DRAM peak)", "GB/s",
                                        (0.001, 100000))
    staging_buffer_bytes: int = spec("size of a pinned staging buffer; a pageable copy moves in chunks of "
                                     "this size", "bytes", (4096, 2**34))
    buffers: str = spec("what host buffers are by default: pinned (page-locked, DMA'd directly) or pageable "
                        "(staged through pinned buffers)", choices=("pinned", "pageable"))
    resident: bool = spec("whether the design computes in host memory itself (a CPU): it has no copies "
                          "between host and device")


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """A node of identical GPUs (this configuration's) and how they reach each other. Read by
    `system/topology.py` and the collectives."""

    gpus: int = spec("GPUs in the node, each this configuration's GPU", "count", (1, 1024))
    gpu_interconnect: str = spec("how GPUs reach each other: all-to-all through NVSwitch, a ring of "
                                 "point-to-point NVLinks (half the links to each neighbour; other pairs go "
                                 "over PCIe), or PCIe through host memory; unused with one GPU",
                                 choices=("nvswitch", "nvlink_ring", "pcie"))
    chunk_bytes: int = spec("GPU-to-GPU transfers move in chunks of this size, which pipeline through "
                            "multi-hop paths", "bytes", (256, 2**34))


# ----------------------------------------------------------------------------------------------
# a CPU (gpusim/cpu): the optional `cpu:` section of a latency-oriented design


@dataclass(frozen=True, slots=True)
class CpuSpec:
    """A multi-core out-of-order CPU, timed by `gpusim/cpu/` (interval model) instead of the GPU timing
    model. Optional: GPU configs have none. The clock is `chip.clock_mhz`; the SIMD group is the functional
    executor's warp (`sm.warp_size`)."""

    cores: int = spec("physical cores; blocks are spread over cores x smt_threads hardware threads "
                      "(must equal chip.sm_count)", "count", (1, 1024))
    smt_threads: int = spec("hardware threads per core (SMT); siblings share the core's dispatch, ports "
                            "and private caches", "threads", (1, 8))
    simd_lanes: int = spec("fp32 lanes of one vector instruction (8: AVX2); a SIMD group runs one warp "
                           "(must equal sm.warp_size)", "lanes", (1, 64))
    dispatch_width: int = spec("instructions the core dispatches per cycle (the interval model's base rate)",
                               "instructions/cycle", (1, 16))
    rob_entries: int = spec("reorder-buffer entries: the out-of-order window in which independent "
                            "long-latency loads overlap", "entries", (1, 4096))
    load_queue_entries: int = spec("loads in flight per core; caps memory-level parallelism together "
                                   "with l1_fill_buffers", "entries", (1, 4096))
    store_queue_entries: int = spec("stores in flight per core; a store miss stalls the core only once "
                                    "they are all waiting", "entries", (1, 4096))
    fma_ports: int = spec("vector floating-point (FMA) pipes per core", "ports", (1, 16))
    alu_ports: int = spec("vector integer / logic / branch pipes per core", "ports", (1, 16))
    load_ports: int = spec("vector loads per cycle per core", "ports", (1, 16))
    store_ports: int = spec("vector stores per cycle per core", "ports", (1, 16))
    gather_lanes_per_cycle: float = spec("elements a gather or scatter (a vector access to scattered "
                                         "addresses) moves per cycle", "lanes/cycle", (0.01, 64))
    sfu_cycles: int = spec("cycles a vector transcendental (rcp, sqrt, ex2, sin: a short library "
                           "sequence) holds an FMA pipe", "cycles", (1, 1000))
    branch_mispredict_penalty_cycles: int = spec("cycles lost when a conditional branch goes the other way "
                                                 "than its last outcome predicted", "cycles", (0, 1000))
    line_bytes: int = spec("cache-line size of every level", "bytes", (16, 1024))
    l1_bytes: int = spec("private L1 data cache per core", "bytes", (1024, 2**30))
    l1_latency_cycles: int = spec("load-to-use latency of an L1 hit (paid in full by a dependent-load "
                                  "chain)", "cycles", (1, 1000))
    l1_fill_buffers: int = spec("outstanding L1 misses per core (miss-address buffers): the memory-level "
                                "parallelism of misses that hit in L2", "entries", (1, 1024))
    l2_bytes: int = spec("private L2 per core", "bytes", (1024, 2**34))
    l2_latency_cycles: int = spec("load-to-use latency of an L2 hit; a prefetched line costs this",
                                  "cycles", (1, 10000))
    l2_outstanding_misses: int = spec("outstanding L2 misses per core (to the LLC and DRAM): bounds a "
                                      "core's own bandwidth, prefetches included", "entries", (1, 4096))
    llc_bytes: int = spec("shared last-level cache (all cores)", "bytes", (1024, 2**36))
    llc_latency_cycles: int = spec("load-to-use latency of an LLC hit", "cycles", (1, 10000))
    dram_channels: int = spec("DRAM channels (64-bit DDR5 channels: 2 per DIMM pair on a desktop)", "count",
                              (1, 256))
    dram_channel_gbps: float = spec("peak bandwidth of one channel (DDR5-4800: 38.4)", "GB/s", (0.1, 10000))
    dram_efficiency: float = spec("fraction of the channels' peak sustained by streaming traffic (refresh, "
                                  "read/write turnaround, the fabric)", "fraction", (0.01, 1.0))
    dram_latency_ns: float = spec("idle load-to-use latency of a DRAM access (a pointer chase's step)", "ns",
                                  (1, 10000))
    prefetch_max_stride_bytes: int = spec("largest stride between a load's consecutive lines that the "
                                          "stride/stream prefetcher follows (0: no prefetcher)", "bytes",
                                          (0, 2**20))


# ----------------------------------------------------------------------------------------------
# power: the activity-based power model (gpusim/stats/power.py), an optional section


@dataclass(frozen=True, slots=True)
class PowerSpec:
    """Board power as AccelWattch builds it: dynamic energy per event (the timing model's activity
    counters x these energies, scaled by (V / V_max)^2 at the clock's voltage), static power per powered
    SM and for the uncore (scaled by V / V_max), the memory's background power and a constant board power.
    Optional: a config without it reports no energy. Read by `gpusim/stats/power.py` (docs/power.md)."""

    tdp_w: float = spec("board power limit (TDP / TGP): over it the clock drops until the kernel's average "
                        "power fits (the power cap)", "W", (1, 100000))
    constant_w: float = spec("constant board power, whatever the chip does: voltage regulators' losses, "
                             "PHYs, fans, peripheral circuits", "W", (0, 100000))
    memory_static_w: float = spec("DRAM background power while the board is on (refresh, idle PHYs, "
                                  "stand-by currents); not scaled with the core voltage", "W", (0, 100000))
    uncore_static_w: float = spec("leakage of the L2, crossbar and memory controllers at the DVFS table's "
                                  "highest voltage (scaled by V / V_max)", "W", (0, 100000))
    sm_static_w: float = spec("leakage of one powered SM at the DVFS table's highest voltage (scaled by V / "
                              "V_max); an SM that runs no block of the kernel is power-gated", "W", (0, 10000))
    dvfs_clocks_mhz: tuple[int, ...] = spec("the clock points of the voltage/frequency curve, ascending "
                                            "(chip.clock_mhz is looked up in it)", "MHz", (1, 100000))
    dvfs_voltages_mv: tuple[int, ...] = spec("the core voltage at each dvfs_clocks_mhz point, not descending; "
                                             "energies below are at the last (highest) one", "mV", (100, 5000))
    instruction_pj: float = spec("fetch, decode, schedule and scoreboard of one warp instruction issued",
                                 "pJ", (0, 1e6))
    register_file_pj: float = spec("register-file operand reads and the result write of one thread "
                                   "instruction (a warp instruction's active lanes)", "pJ", (0, 1e6))
    fp32_op_pj: float = spec("one lane of the FP32 pipe (FFMA, FADD, FMUL) for one issue", "pJ", (0, 1e6))
    int_op_pj: float = spec("one lane of the integer pipe (IMAD, IADD3, logic, shifts)", "pJ", (0, 1e6))
    fp64_op_pj: float = spec("one lane of the FP64 pipe (DFMA, DADD, DMUL)", "pJ", (0, 1e6))
    sfu_op_pj: float = spec("one lane of the SFU (MUFU: ex2, rsqrt, sin, ...)", "pJ", (0, 1e6))
    tensor_fma_pj: float = spec("one dense f16 multiply-add of the tensor core (its busy cycles x "
                                "units.tensor.f16_fma_per_cycle)", "pJ", (0, 1e6))
    control_op_pj: float = spec("one lane of the LD/ST (address generation), branch or sync unit for one "
                                "issue", "pJ", (0, 1e6))
    l1_sector_pj: float = spec("one 32-byte sector looked up in the L1 (hit or miss, tag and data)", "pJ",
                               (0, 1e6))
    shared_wavefront_pj: float = spec("one shared-memory wavefront (a pass over the banks)", "pJ", (0, 1e6))
    noc_sector_pj: float = spec("one sector carried by the crossbar between an SM and an L2 slice", "pJ",
                                (0, 1e6))
    l2_sector_pj: float = spec("one sector read, written or atomically updated in an L2 slice", "pJ", (0, 1e6))
    dram_pj_per_bit: float = spec("DRAM read or write energy per bit moved (array, I/O and PHY, both ends); "
                                  "not scaled with the core voltage", "pJ/bit", (0, 1000))
    dram_activate_nj: float = spec("one row activation and its precharge (a row miss or conflict)", "nJ",
                                   (0, 1000))
    pcie_pj_per_bit: float = spec("one bit copied between host and device over PCIe (both ends' PHYs and "
                                  "controllers); counted on the copies of a program or `compare "
                                  "--include-transfers`", "pJ/bit", (0, 1000))


@dataclass(frozen=True, slots=True)
class CpuPowerSpec:
    """A CPU package's power (the `cpu:` section's design): dynamic energy per instruction, vector FP
    operation, cache access and DRAM bit (the CPU model's counts x these), static power per core with work,
    for the uncore (I/O die, fabric, LLC, memory controllers) and for the DIMMs. Optional: a CPU config
    without it reports no energy. Read by `gpusim/cpu/energy.py` (docs/power.md, "The CPU")."""

    tdp_w: float = spec("package power limit (TDP) at the base clock chip.clock_mhz; a run over it is "
                        "reported as such (the base clock is the one the vendor guarantees within it)", "W",
                        (1, 100000))
    uncore_static_w: float = spec("package power with every core asleep: I/O die, fabric, LLC and memory "
                                  "controllers", "W", (0, 100000))
    core_static_w: float = spec("leakage and clock tree of one core that has work (a core with none sleeps)",
                                "W", (0, 10000))
    dram_static_w: float = spec("the DIMMs' background power (refresh, stand-by)", "W", (0, 100000))
    instruction_pj: float = spec("one instruction (a SIMD group's operation) through fetch, decode, rename, "
                                 "schedule, register file and retire", "pJ", (0, 1e6))
    vector_fp_op_pj: float = spec("one vector FP operation on an FMA pipe (all simd_lanes lanes; an fp64 "
                                  "vector counts twice, a transcendental cpu.sfu_cycles times)", "pJ", (0, 1e6))
    l1_access_pj: float = spec("one vector load or store, or one gathered element, at the L1", "pJ", (0, 1e6))
    l2_line_pj: float = spec("one line moved between the L1 and the L2 (an L1 miss)", "pJ", (0, 1e6))
    llc_line_pj: float = spec("one line moved between the L2 and the LLC over the fabric (an L2 miss)", "pJ",
                              (0, 1e6))
    dram_pj_per_bit: float = spec("DRAM read or write energy per bit (array, I/O and PHY, both ends)",
                                  "pJ/bit", (0, 1000))


# ----------------------------------------------------------------------------------------------
# the whole configuration


class UnitTable(Mapping):
    """A read-only, hashable mapping of name -> spec (unit class -> `UnitSpec`, opcode -> `OpcodeSpec`),
    so a `Config` stays hashable."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, UnitSpec]):
        self._items = dict(items)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._items.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"UnitTable({self._items!r})"


@dataclass(frozen=True, slots=True)
class Config:
    """A resolved, validated hardware configuration. Built by `gpusim.config.load_config`."""

    name: str = field(metadata={"yaml": False, "doc": "config name (file stem or built-in name)"})
    source: str = field(metadata={"yaml": False, "doc": "path of the YAML file it came from"})
    description: str = spec("one line saying what the design is")
    chip: ChipSpec = spec("the die")
    sm: SMSpec = spec("per-SM resource limits")
    units: Mapping[str, UnitSpec] = spec("execution units by class")
    l1: L1Spec = spec("per-SM L1 data cache")
    shared_memory: SharedMemorySpec = spec("per-SM shared memory")
    l2: L2Spec = spec("chip-wide L2")
    dram: DramSpec = spec("device memory")
    scheduler: SchedulerSpec = spec("warp schedulers")
    launch: LaunchSpec = spec("kernel launch")
    pcie: PcieSpec = spec("host link")
    nvlink: NvlinkSpec = spec("GPU-to-GPU links")
    host: HostSpec = spec("host memory and copies")
    system: SystemSpec = spec("GPUs in the node and their interconnect")
    interconnect: InterconnectSpec = spec("crossbar between the SMs and the L2 (optional section)",
                                          default=InterconnectSpec())
    opcodes: Mapping[str, OpcodeSpec] = spec("per-opcode latencies and throughputs where they differ from "
                                             "their unit's (optional section)", default=UnitTable({}))
    cpu: CpuSpec | None = spec("a CPU timed by gpusim/cpu instead of the GPU timing model (optional section)",
                               default=None)
    power: PowerSpec | None = spec("the power model's energies and powers (optional section: without it no "
                                   "energy is reported)", default=None)
    cpu_power: CpuPowerSpec | None = spec("a CPU's package and DRAM energies (optional section, with cpu:)",
                                          default=None)

    def opcode_timing(self, opcode: str, unit: str) -> tuple[int, int]:
        """(latency_cycles, lanes_per_subpartition) of `opcode` running on unit class `unit`: the
        `opcodes:` table's figures where it has them, else the unit's."""
        u = self.units[unit]
        op = self.opcodes.get(opcode)
        if op is None:
            return u.latency_cycles, u.lanes_per_subpartition
        return (u.latency_cycles if op.latency_cycles is None else op.latency_cycles,
                u.lanes_per_subpartition if op.lanes_per_subpartition is None else op.lanes_per_subpartition)

    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON-able data (sections as dicts, tuples as lists)."""
        return _plain(self)

    def hash(self) -> str:
        """Short, stable sha256 of the resolved configuration (name and source excluded, so the same
        hardware reached through different files hashes the same)."""
        data = self.to_dict()
        data.pop("name")
        data.pop("source")
        if not data["opcodes"]:
            data.pop("opcodes")  # the optional table, empty: the hash of a config written before it existed
        if data["cpu"] is None:
            data.pop("cpu")  # a GPU: no CPU section, the hash it had before the section existed
        if data["power"] is None:
            data.pop("power")  # no power model: the hash it had before the section existed
        if data["cpu_power"] is None:
            data.pop("cpu_power")  # likewise for a CPU
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def dram_bytes_per_cycle(self) -> float:
        """What the DRAM's data buses sustain together, in bytes a core cycle: dram.bandwidth_gbps x
        dram.efficiency (what the bank model leaves aside), the roof of any kernel's DRAM traffic."""
        return self.dram.bandwidth_gbps * self.dram.efficiency / (self.chip.clock_mhz / 1000.0)

    def derived(self) -> dict[str, Any]:
        """Figures that follow from the fields: peak throughputs, totals, machine balance."""
        chip, sm, units = self.chip, self.sm, self.units
        clock_ghz = chip.clock_mhz / 1000.0
        fp32_per_sm = units["fp32"].lanes_per_subpartition * sm.subpartitions
        fp64_per_sm = units["fp64"].lanes_per_subpartition * sm.subpartitions
        fp32_total = fp32_per_sm * chip.sm_count
        peak_fp32 = fp32_total * 2 * clock_ghz
        peak_fp64 = fp64_per_sm * chip.sm_count * 2 * clock_ghz
        return {
            "fp32_cores_per_sm": fp32_per_sm,
            "total_fp32_cores": fp32_total,
            "peak_fp32_gflops": round(peak_fp32, 3),
            "peak_fp64_gflops": round(peak_fp64, 3),
            "peak_dram_bandwidth_gbps": self.dram.bandwidth_gbps,
            "machine_balance_flops_per_byte": round(peak_fp32 / self.dram.bandwidth_gbps, 3),
            "l2_size_bytes": self.l2.size_bytes,
            "l1_sets": self.l1.size_bytes // (self.l1.line_size_bytes * self.l1.ways),
            "register_file_bytes_per_sm": sm.registers_per_sm * 4,
            "shared_memory_bandwidth_bytes_per_cycle_per_sm": (self.shared_memory.banks
                                                               * self.shared_memory.bank_width_bytes),
            "max_warps_per_sm": sm.max_warps_per_sm,
            "max_threads_per_sm": sm.max_threads_per_sm,
            "max_blocks_per_sm": sm.max_blocks_per_sm,
            "max_resident_threads": sm.max_threads_per_sm * chip.sm_count,
            "pcie_bandwidth_gbps": self.pcie.bandwidth_gbps,
            "pcie_achieved_bandwidth_gbps": round(self.pcie.bandwidth_gbps * self.pcie.efficiency, 3),
            "nvlink_total_bandwidth_gbps": round(self.nvlink.links * self.nvlink.bandwidth_per_link_gbps, 3),
            "cycle_ns": round(1000.0 / chip.clock_mhz, 6),
        }


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj):  # (one unit's own fields are left out of the other units)
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not (f.name in UNIT_ONLY_FIELDS and getattr(obj, f.name) is None)}
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return [_plain(v) for v in obj]
    return obj


SECTIONS: dict[str, type] = {
    "chip": ChipSpec, "sm": SMSpec, "l1": L1Spec, "shared_memory": SharedMemorySpec, "l2": L2Spec,
    "dram": DramSpec, "scheduler": SchedulerSpec, "launch": LaunchSpec, "pcie": PcieSpec,
    "nvlink": NvlinkSpec, "host": HostSpec, "system": SystemSpec, "interconnect": InterconnectSpec,
    "cpu": CpuSpec, "power": PowerSpec, "cpu_power": CpuPowerSpec,
}


def all_field_paths() -> list[str]:
    """Every YAML field as a dotted path (`sm.max_warps_per_sm`, `units.<class>.latency_cycles`);
    the docs test checks each appears in `docs/config.md`."""
    paths = ["description"]
    for section, cls in SECTIONS.items():
        paths += [f"{section}.{f.name}" for f in dataclasses.fields(cls)]
    paths += [f"units.<class>.{f.name}" for f in dataclasses.fields(UnitSpec)]
    paths += [f"opcodes.<opcode>.{f.name}" for f in dataclasses.fields(OpcodeSpec)]
    return paths

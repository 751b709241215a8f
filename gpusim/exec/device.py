"""What a CUDA program learns about its device: `cudaDeviceProp`, `cudaDeviceGetAttribute` and
`cudaFuncAttributes`, each from the YAML config (the same fields the simulation runs on).

The struct layouts are CUDA 13's (`driver_types.h`): byte offsets of the fields gpusim fills, the rest zero.
tests/exec/test_device.py compiles `offsetof` of each against the toolkit's header where nvcc is installed.
Fields of texture and surface limits, PCI identity and the like describe nothing gpusim models: zero."""

from __future__ import annotations

import struct

from gpusim.config.occupancy import occupancy
from gpusim.config.schema import Config

PROP_BYTES = 1008  # sizeof(struct cudaDeviceProp), CUDA 13
FUNC_ATTR_BYTES = 144  # sizeof(struct cudaFuncAttributes)

# cudaDeviceProp: field -> (offset, struct format)
PROP_FIELDS = {
    "name": (0, "256s"), "totalGlobalMem": (288, "Q"), "sharedMemPerBlock": (296, "Q"), "regsPerBlock": (304, "i"),
    "warpSize": (308, "i"), "memPitch": (312, "Q"), "maxThreadsPerBlock": (320, "i"), "maxThreadsDim": (324, "3i"),
    "maxGridSize": (336, "3i"), "totalConstMem": (352, "Q"), "major": (360, "i"), "minor": (364, "i"),
    "textureAlignment": (368, "Q"), "texturePitchAlignment": (376, "Q"), "multiProcessorCount": (384, "i"),
    "integrated": (388, "i"), "canMapHostMemory": (392, "i"), "concurrentKernels": (560, "i"),
    "asyncEngineCount": (584, "i"), "unifiedAddressing": (588, "i"), "memoryBusWidth": (592, "i"),
    "l2CacheSize": (596, "i"), "maxThreadsPerMultiProcessor": (604, "i"), "streamPrioritiesSupported": (608, "i"),
    "globalL1CacheSupported": (612, "i"), "localL1CacheSupported": (616, "i"),
    "sharedMemPerMultiprocessor": (624, "Q"), "regsPerMultiprocessor": (632, "i"), "managedMemory": (636, "i"),
    "concurrentManagedAccess": (656, "i"), "cooperativeLaunch": (668, "i"), "sharedMemPerBlockOptin": (672, "Q"),
    "maxBlocksPerMultiProcessor": (688, "i"), "reservedSharedMemPerBlock": (696, "Q"),
    "hostRegisterSupported": (704, "i"), "unifiedFunctionPointers": (752, "i"),
}
# cudaFuncAttributes: field -> (offset, format)
FUNC_FIELDS = {
    "sharedSizeBytes": (0, "Q"), "constSizeBytes": (8, "Q"), "localSizeBytes": (16, "Q"),
    "maxThreadsPerBlock": (24, "i"), "numRegs": (28, "i"), "ptxVersion": (32, "i"), "binaryVersion": (36, "i"),
    "cacheModeCA": (40, "i"), "maxDynamicSharedSizeBytes": (44, "i"), "preferredShmemCarveout": (48, "i"),
}
CONST_BANK_BYTES = 65536  # totalConstMem: the constant bank of every architecture since cc 2.0 (PTX ISA)
MEM_PITCH_BYTES = 2**31 - 1  # memPitch: the largest pitch cudaMallocPitch/cudaMemcpy2D allow (every cc)
TEXTURE_ALIGNMENT_BYTES = 512  # textureAlignment (cc 2.0 on); cudaMalloc's alignment, exec/memory.py ALIGN


def capability(cfg: Config) -> tuple[int, int]:
    major, _, minor = cfg.chip.compute_capability.partition(".")
    return int(major), int(minor or 0)


def properties(cfg: Config) -> dict[str, object]:
    """cudaDeviceProp's fields as gpusim's device has them."""
    sm, chip = cfg.sm, cfg.chip
    major, minor = capability(cfg)
    return {
        "name": f"gpusim {cfg.name}".encode()[:255], "totalGlobalMem": chip.global_memory_bytes,
        "sharedMemPerBlock": sm.max_shared_memory_per_block_bytes, "regsPerBlock": sm.max_registers_per_block,
        "warpSize": sm.warp_size, "memPitch": MEM_PITCH_BYTES, "maxThreadsPerBlock": sm.max_threads_per_block,
        "maxThreadsDim": tuple(sm.max_block_dims), "maxGridSize": tuple(min(g, 2**31 - 1) for g in chip.max_grid_dims),
        "totalConstMem": CONST_BANK_BYTES, "major": major, "minor": minor,
        "textureAlignment": TEXTURE_ALIGNMENT_BYTES, "texturePitchAlignment": 32, "multiProcessorCount": chip.sm_count,
        "integrated": int(cfg.host.resident), "canMapHostMemory": 1, "concurrentKernels": 1,
        "asyncEngineCount": chip.copy_engines, "unifiedAddressing": 1, "memoryBusWidth": cfg.dram.bus_width_bits,
        "l2CacheSize": cfg.l2.size_bytes, "maxThreadsPerMultiProcessor": sm.max_threads_per_sm,
        "streamPrioritiesSupported": 1, "globalL1CacheSupported": 1, "localL1CacheSupported": 1,
        "sharedMemPerMultiprocessor": sm.shared_memory_per_sm_bytes, "regsPerMultiprocessor": sm.registers_per_sm,
        "managedMemory": 1, "concurrentManagedAccess": 0, "cooperativeLaunch": 0,
        "sharedMemPerBlockOptin": sm.max_shared_memory_per_block_optin_bytes,
        "maxBlocksPerMultiProcessor": sm.max_blocks_per_sm,
        "reservedSharedMemPerBlock": sm.reserved_shared_memory_per_block_bytes, "hostRegisterSupported": 1,
        "unifiedFunctionPointers": 0,
    }


def pack(fields: dict[str, tuple[int, str]], values: dict[str, object], size: int) -> bytes:
    out = bytearray(size)
    for name, value in values.items():
        off, fmt = fields[name]
        args = value if isinstance(value, tuple) else (value,)
        struct.pack_into("<" + fmt, out, off, *args)
    return bytes(out)


def properties_bytes(cfg: Config) -> bytes:
    """The bytes of `struct cudaDeviceProp` for cudaGetDeviceProperties."""
    return pack(PROP_FIELDS, properties(cfg), PROP_BYTES)


# cudaDeviceAttr -> the cudaDeviceProp field it reads (driver_types.h: enum cudaDeviceAttr)
ATTRIBUTE_FIELDS = {
    1: "maxThreadsPerBlock", 8: "sharedMemPerBlock", 9: "totalConstMem", 10: "warpSize", 11: "memPitch",
    12: "regsPerBlock", 14: "textureAlignment", 16: "multiProcessorCount", 18: "integrated", 19: "canMapHostMemory",
    31: "concurrentKernels", 37: "memoryBusWidth", 38: "l2CacheSize", 39: "maxThreadsPerMultiProcessor",
    40: "asyncEngineCount", 41: "unifiedAddressing", 51: "texturePitchAlignment", 75: "major", 76: "minor",
    78: "streamPrioritiesSupported", 79: "globalL1CacheSupported", 80: "localL1CacheSupported",
    81: "sharedMemPerMultiprocessor", 82: "regsPerMultiprocessor", 83: "managedMemory",
    89: "concurrentManagedAccess", 95: "cooperativeLaunch", 97: "sharedMemPerBlockOptin",
    99: "hostRegisterSupported", 106: "maxBlocksPerMultiProcessor", 111: "reservedSharedMemPerBlock",
}
ATTRIBUTE_DIMS = {2: ("maxThreadsDim", 0), 3: ("maxThreadsDim", 1), 4: ("maxThreadsDim", 2),
                  5: ("maxGridSize", 0), 6: ("maxGridSize", 1), 7: ("maxGridSize", 2)}
CLOCK_RATE, MEMORY_CLOCK_RATE, GPU_OVERLAP = 13, 36, 15
# attributes of what gpusim's device is not: no kernel timeout (17), the default compute mode (20), no ECC (32),
# PCI bus/device/domain 0 (33, 34, 50), no TCC driver (35), not a multi-GPU board (84, 85), no host-native or
# pageable-memory access (86, 88), no compute preemption (90), no host pointers for registered memory (91),
# no host page tables (100, 101)
ZERO_ATTRIBUTES = frozenset({17, 20, 32, 33, 34, 35, 50, 84, 85, 86, 88, 90, 91, 100, 101})


def attribute(cfg: Config, attr: int) -> int | None:
    """cudaDeviceGetAttribute's value, or None for an attribute gpusim does not know."""
    props = properties(cfg)
    if attr in ATTRIBUTE_FIELDS:
        return int(props[ATTRIBUTE_FIELDS[attr]])
    if attr in ATTRIBUTE_DIMS:
        name, i = ATTRIBUTE_DIMS[attr]
        return int(props[name][i])
    if attr == CLOCK_RATE:  # kHz (CUDA 13 keeps it as an attribute only)
        return int(round(cfg.chip.clock_mhz * 1000))
    if attr == MEMORY_CLOCK_RATE:  # kHz: half the data rate (double data rate)
        return int(round(cfg.dram.data_rate_mtps * 1000 / 2))
    if attr == GPU_OVERLAP:
        return int(cfg.chip.copy_engines > 0)
    if attr in ZERO_ATTRIBUTES:
        return 0
    return None


def function_attributes(cfg: Config, *, shared_bytes: int, local_bytes: int, regs: int, ptx_version: int,
                        max_dynamic_shared: int) -> bytes:
    """The bytes of `struct cudaFuncAttributes` for a kernel."""
    major, minor = capability(cfg)
    values = {"sharedSizeBytes": shared_bytes, "constSizeBytes": 0, "localSizeBytes": local_bytes,
              "maxThreadsPerBlock": cfg.sm.max_threads_per_block, "numRegs": regs, "ptxVersion": ptx_version,
              "binaryVersion": 10 * major + minor, "cacheModeCA": 0,
              "maxDynamicSharedSizeBytes": max_dynamic_shared, "preferredShmemCarveout": -1}
    return pack(FUNC_FIELDS, values, FUNC_ATTR_BYTES)


def active_blocks(cfg: Config, block: int, regs: int, static_shared: int, dynamic_shared: int) -> int:
    """cudaOccupancyMaxActiveBlocksPerMultiprocessor: blocks of `block` threads resident on one SM."""
    return occupancy(cfg, block, regs, static_shared + dynamic_shared).active_blocks_per_sm

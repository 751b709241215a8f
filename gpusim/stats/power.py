"""Energy and power of a simulated kernel: an activity-based model in AccelWattch's shape (Kandiah et al.,
MICRO 2021), read from the counters the timing model already keeps (docs/power.md).

    energy = sum over events (count x energy per event) x (V / V_max)^2      dynamic, on the chip
           + DRAM bits x pJ/bit + activations x nJ                           dynamic, the memory's own supply
           + (SM leakage x SM-seconds powered + uncore leakage x seconds) x V / V_max
           + (memory background + constant board power) x seconds
    power  = energy / seconds, seconds = cycles / clock

V is the core voltage at the clock (the config's `power.dvfs_*` curve, linear between its points, the
lowest voltage below them, the last segment extended above them); the per-event energies of the config
are at the curve's highest voltage. Every coefficient is a field of the config's `power:` section.

The power cap: when the kernel's average power at the config's clock is over `power.tdp_w`, the clock
drops (and the voltage with it) to the highest clock whose power fits, as a board's power controller
settles over a window much longer than one kernel (the kernel is taken to run in a steady state of
repeats). The kernel keeps its cycle count (first order: a compute-bound kernel, the kind that reaches
the cap, takes the same cycles at any clock); its time, energy and power are those at the lower clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# breakdown keys, in the order reports print them: (what, scaled by) - "v2" dynamic on the chip's supply,
# "dram" the memory's own, "v1" leakage, "fixed" the board's
PARTS: dict[str, tuple[str, str]] = {
    "instruction": ("fetch, decode and scheduling of warp instructions", "v2"),
    "register_file": ("register-file reads and writes", "v2"),
    "fp32": ("FP32 pipe", "v2"),
    "int": ("integer pipe", "v2"),
    "fp64": ("FP64 pipe", "v2"),
    "sfu": ("SFU", "v2"),
    "tensor": ("tensor cores", "v2"),
    "control": ("LD/ST address, branch and sync units", "v2"),
    "l1": ("L1 sectors", "v2"),
    "shared": ("shared-memory wavefronts", "v2"),
    "noc": ("crossbar (SM to L2)", "v2"),
    "l2": ("L2 sectors", "v2"),
    "dram": ("DRAM reads, writes and activations", "dram"),
    "sm_static": ("SM leakage while powered", "v1"),
    "uncore_static": ("L2, crossbar and controller leakage", "v1"),
    "memory_static": ("DRAM background and refresh", "fixed"),
    "constant": ("constant board power", "fixed"),
}
# a pipe's lanes (unit_busy x lanes) -> its part and the energy field per lane
PIPE_ENERGY = {"fp32": ("fp32", "fp32_op_pj"), "int": ("int", "int_op_pj"), "fp64": ("fp64", "fp64_op_pj"),
               "sfu": ("sfu", "sfu_op_pj"), "ldst": ("control", "control_op_pj"),
               "branch": ("control", "control_op_pj"), "sync": ("control", "control_op_pj")}
# an event count -> its part and the energy field (pJ) per event, for the on-chip events
EVENT_ENERGY = {"warp_instructions": ("instruction", "instruction_pj"),
                "thread_instructions": ("register_file", "register_file_pj"),
                "tensor_fmas": ("tensor", "tensor_fma_pj"),
                "l1_sectors": ("l1", "l1_sector_pj"),
                "shared_wavefronts": ("shared", "shared_wavefront_pj"),
                "noc_sectors": ("noc", "noc_sector_pj"),
                "l2_sectors": ("l2", "l2_sector_pj")}
PJ = 1e-12


@dataclass(frozen=True)
class Activity:
    """The events of one kernel that cost energy, counted from its KernelTiming (and the functional
    executor's counters where there are some)."""

    cycles: int
    sm_active_cycles: int  # summed over SMs: cycles each held a resident warp (powered, not gated)
    warp_instructions: int
    thread_instructions: float  # active lanes of the warp instructions (warp_size each without the executor's)
    lane_ops: dict[str, float]  # pipe -> lane-issues (busy cycles x lanes, times the SIMT efficiency)
    tensor_fmas: float  # f16-equivalent multiply-adds (tensor busy cycles x f16_fma_per_cycle)
    l1_sectors: int
    shared_wavefronts: int
    noc_sectors: int  # sectors between the SMs and the L2, both ways
    l2_sectors: int  # read (hit or miss), written, atomically updated
    dram_bits: int
    dram_activates: int

    def scaled(self, k: float) -> Activity:
        """Every count times k (the same activity, k times as long)."""
        d = {name: (getattr(self, name) * k if not isinstance(getattr(self, name), dict)
                    else {u: v * k for u, v in getattr(self, name).items()}) for name in self.__dataclass_fields__}
        return Activity(**d)


def activity(timing: Any, cfg: Any, stats: Any = None) -> Activity:
    """The energy-relevant events of a finished kernel: per-pipe lanes from the ports' busy cycles, memory
    events from the caches' and DRAM's counters. `stats` (the functional executor's ExecStats) gives the
    active lanes; without it every issued lane counts."""
    sms = timing.sms
    issued = sum(s.issued for s in sms)
    warp_size = cfg.sm.warp_size
    if stats is not None and getattr(stats, "warp_instructions", 0):
        threads = float(stats.thread_instructions)
        simt = stats.thread_instructions / (stats.warp_instructions * warp_size)
    else:
        threads, simt = float(issued * warp_size), 1.0
    busy: dict[str, int] = {}
    for s in sms:
        for u, v in s.unit_busy.items():
            busy[u] = busy.get(u, 0) + v
    lane_ops = {u: busy.get(u, 0) * cfg.units[u].lanes_per_subpartition * simt
                for u in PIPE_ENERGY if u in cfg.units}
    tensor = cfg.units.get("tensor")
    tensor_fmas = busy.get("tensor", 0) * tensor.f16_fma_per_cycle if tensor is not None else 0.0
    l2, dram = timing.l2, timing.dram
    l2_sectors = (l2.get("hit_sectors", 0) + l2.get("miss_sectors", 0) + l2.get("write_sectors", 0)
                  + l2.get("atomic_operations", 0))
    return Activity(
        cycles=timing.cycles, sm_active_cycles=sum(s.active_cycles for s in sms), warp_instructions=issued,
        thread_instructions=threads, lane_ops=lane_ops, tensor_fmas=float(tensor_fmas),
        l1_sectors=sum(s.l1_hit_sectors + s.l1_miss_sectors for s in sms),
        shared_wavefronts=sum(s.shared_wavefronts for s in sms),
        noc_sectors=l2_sectors, l2_sectors=l2_sectors,
        dram_bits=8 * (dram.get("bytes_read", 0) + dram.get("bytes_written", 0)),
        dram_activates=dram.get("row_misses", 0) + dram.get("row_conflicts", 0))


def voltage_mv(power: Any, clock_mhz: float) -> float:
    """The core voltage at `clock_mhz` on the config's DVFS curve: linear between its points, its lowest
    voltage below the first, its last segment extended above the last."""
    clocks, volts = power.dvfs_clocks_mhz, power.dvfs_voltages_mv
    if len(clocks) == 1 or clock_mhz <= clocks[0]:
        return float(volts[0])
    i = next((k for k in range(1, len(clocks)) if clock_mhz <= clocks[k]), len(clocks) - 1)
    f0, f1, v0, v1 = clocks[i - 1], clocks[i], volts[i - 1], volts[i]
    return v0 + (v1 - v0) * (clock_mhz - f0) / (f1 - f0)


def energy_breakdown(power: Any, act: Activity, clock_mhz: float) -> tuple[dict[str, float], float]:
    """(joules per part of PARTS, seconds) of `act` run at `clock_mhz`."""
    v = voltage_mv(power, clock_mhz) / power.dvfs_voltages_mv[-1]
    seconds = act.cycles / (clock_mhz * 1e6)
    out = dict.fromkeys(PARTS, 0.0)
    for name, (part, pj) in EVENT_ENERGY.items():
        out[part] += getattr(act, name) * getattr(power, pj) * PJ * v * v
    for pipe, lanes in act.lane_ops.items():
        part, pj = PIPE_ENERGY[pipe]
        out[part] += lanes * getattr(power, pj) * PJ * v * v
    out["dram"] = act.dram_bits * power.dram_pj_per_bit * PJ + act.dram_activates * power.dram_activate_nj * 1e-9
    out["sm_static"] = power.sm_static_w * v * act.sm_active_cycles / (clock_mhz * 1e6)
    out["uncore_static"] = power.uncore_static_w * v * seconds
    out["memory_static"] = power.memory_static_w * seconds
    out["constant"] = power.constant_w * seconds
    return out, seconds


def average_power(power: Any, act: Activity, clock_mhz: float) -> float:
    """Watts of `act` at `clock_mhz` (its energy over its time)."""
    parts, seconds = energy_breakdown(power, act, clock_mhz)
    return sum(parts.values()) / seconds if seconds else 0.0


def capped_clock(power: Any, act: Activity, clock_mhz: float) -> float:
    """The highest clock (MHz, at most `clock_mhz`) at which `act` draws no more than power.tdp_w; the
    DVFS curve's lowest clock if even that draws more (the cap cannot be met by the clock alone)."""
    if average_power(power, act, clock_mhz) <= power.tdp_w:
        return clock_mhz
    lo, hi = min(power.dvfs_clocks_mhz[0], clock_mhz), clock_mhz
    if average_power(power, act, lo) > power.tdp_w:
        return lo
    for _ in range(50):  # power rises with the clock: bisect to well under 0.001 MHz
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if average_power(power, act, mid) <= power.tdp_w else (lo, mid)
    return lo


@dataclass(frozen=True)
class KernelPower:
    """A kernel's energy and power at the clock the power cap leaves it (`clock_mhz`; the config's is
    `nominal_clock_mhz`)."""

    nominal_clock_mhz: float
    clock_mhz: float
    voltage_mv: float
    seconds: float
    energy_j: float
    power_w: float
    unconstrained_power_w: float  # at the nominal clock
    limit_w: float
    breakdown_j: dict[str, float] = field(default_factory=dict)

    @property
    def limited(self) -> bool:
        """Whether the power cap lowered the clock."""
        return self.clock_mhz < self.nominal_clock_mhz

    @property
    def static_w(self) -> float:
        """Watts of the parts that scale with time, not with events (leakage, background, constant)."""
        fixed = sum(v for k, v in self.breakdown_j.items() if PARTS[k][1] in ("v1", "fixed"))
        return fixed / self.seconds if self.seconds else 0.0

    def metrics(self) -> dict[str, Any]:
        """The kernel metrics (gpusim.stats.metrics.POWER_METRICS, in its order)."""
        return {
            "energy_j": self.energy_j,
            "average_power_w": self.power_w,
            "unconstrained_power_w": self.unconstrained_power_w,
            "power_limit_w": self.limit_w,
            "power_limited": int(self.limited),  # 1 or 0, as CSV cells are numbers
            "power_clock_mhz": self.clock_mhz,
            "power_voltage_mv": self.voltage_mv,
            "power_kernel_seconds": self.seconds,
            "energy_breakdown_j": dict(self.breakdown_j),
            "power_breakdown_w": {k: v / self.seconds if self.seconds else 0.0 for k, v in self.breakdown_j.items()},
        }


def power_of(power: Any, act: Activity, clock_mhz: float, *, cap: bool = True) -> KernelPower:
    """`act`'s energy and power at `clock_mhz`, lowered by the power cap when `cap`."""
    unconstrained = average_power(power, act, clock_mhz)
    clock = capped_clock(power, act, clock_mhz) if cap else clock_mhz
    parts, seconds = energy_breakdown(power, act, clock)
    energy = sum(parts.values())
    return KernelPower(nominal_clock_mhz=clock_mhz, clock_mhz=clock, voltage_mv=voltage_mv(power, clock),
                       seconds=seconds, energy_j=energy, power_w=energy / seconds if seconds else 0.0,
                       unconstrained_power_w=unconstrained, limit_w=power.tdp_w, breakdown_j=parts)


def kernel_power(cfg: Any, timing: Any, stats: Any = None, *, cap: bool = True) -> KernelPower | None:
    """The energy and power of a simulated kernel on `cfg` (None where the config has no `power:`
    section)."""
    if cfg is None or getattr(cfg, "power", None) is None:
        return None
    return power_of(cfg.power, activity(timing, cfg, stats), timing.clock_mhz, cap=cap)


def transfer_energy(power: Any, nbytes: float) -> float:
    """Joules of copying `nbytes` between host and device over PCIe (power.pcie_pj_per_bit)."""
    return nbytes * 8 * power.pcie_pj_per_bit * PJ


def idle_power(power: Any, sm_count: int, clock_mhz: float | None = None) -> float:
    """Watts of the board with no kernel: at the DVFS curve's lowest clock the SMs are power-gated
    (constant + memory background + uncore leakage); with `clock_mhz` the clocks are held there and every
    SM is powered (its leakage too), as after a kernel before the driver lowers them."""
    if clock_mhz is None:
        v = power.dvfs_voltages_mv[0] / power.dvfs_voltages_mv[-1]
        return power.constant_w + power.memory_static_w + power.uncore_static_w * v
    v = voltage_mv(power, clock_mhz) / power.dvfs_voltages_mv[-1]
    return power.constant_w + power.memory_static_w + (power.uncore_static_w + power.sm_static_w * sm_count) * v

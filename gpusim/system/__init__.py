"""The system around the GPU: host memory, PCIe links and copy engines, NVLink and NVSwitch, streams of
asynchronous operations, and ring collectives across GPUs (docs/system.md). Kernel durations come in as
cycles; the analysis layer (`gpusim.analysis.simulate_program`) times kernels with the timing model.

    >>> from gpusim.config import load_config
    >>> from gpusim.system import CopyH2D, Kernel, Program, run_program
    >>> report = run_program(Program((CopyH2D(bytes=1 << 20), Kernel(cycles=14100))), load_config("a100"))
    >>> round(report.seconds * 1e6, 2)   # 1 us latency + 1 MiB at 31.5 x 0.83 GB/s, then 10 us of kernel
    51.11
"""

from gpusim.system.collectives import KINDS as COLLECTIVES
from gpusim.system.collectives import CollectiveResult, simulate_collective
from gpusim.system.program import (
    Collective,
    CopyD2H,
    CopyH2D,
    CopyP2P,
    EventRecord,
    EventWait,
    Kernel,
    Op,
    Program,
    ProgramError,
    builtin_programs,
    find_program,
    load_program,
    parse_bytes,
)
from gpusim.system.report import OpRecord, ProgramReport
from gpusim.system.stream import run_program
from gpusim.system.topology import Topology
from gpusim.system.trace import trace_dict, trace_events

__all__ = ["COLLECTIVES", "Collective", "CollectiveResult", "CopyD2H", "CopyH2D", "CopyP2P", "EventRecord",
           "EventWait", "Kernel", "Op", "OpRecord", "Program", "ProgramError", "ProgramReport", "Topology",
           "builtin_programs", "find_program", "load_program", "parse_bytes", "run_program", "simulate_collective",
           "trace_dict", "trace_events"]

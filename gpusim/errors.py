"""gpusim's own error types. Each carries where the problem is (file:line, kernel pc, launch field)
so that the CLI can print it on one line and exit non-zero."""

from __future__ import annotations


class GpusimError(Exception):
    """Base class of every error gpusim raises on bad input or a kernel that cannot finish."""


class ConfigError(GpusimError):
    """A hardware configuration (YAML) is malformed or impossible: `file:line: field: what is wrong`."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.file, self.line, self.field, self.reason = file, line, field, message
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        super().__init__(f"{where}{field + ': ' if field else ''}{message}")


class AssemblyError(GpusimError):
    """A kernel's text does not assemble: `file:line:col: message (token 'x')`."""

    def __init__(self, message: str, *, file: str = "<string>", line: int = 0, col: int = 0,
                 token: str | None = None):
        self.file, self.line, self.col, self.token, self.reason = file, line, col, token, message
        tok = f" (at '{token}')" if token else ""
        super().__init__(f"{file}:{line}:{col}: {message}{tok}")


class LaunchError(GpusimError):
    """A launch cannot run as asked: bad grid/block, too much shared memory, a missing parameter."""

    def __init__(self, message: str, *, field: str | None = None):
        self.field, self.reason = field, message
        super().__init__(f"launch: {field + ': ' if field else ''}{message}")


class KernelFault(GpusimError):
    """A kernel did something the hardware would trap on (out-of-bounds or misaligned address, a
    runaway loop). Names the kernel, pc, source line, block and thread."""

    def __init__(self, message: str, *, kernel: str = "", pc: int = -1, line: int = 0,
                 source: str = "", block: tuple | None = None, thread: tuple | None = None,
                 address: int | None = None):
        self.kernel, self.pc, self.line, self.source = kernel, pc, line, source
        self.block, self.thread, self.address, self.reason = block, thread, address, message
        parts = [f"kernel {kernel}" if kernel else "kernel", f"pc {pc}", f"line {line}"]
        if block is not None:
            parts.append("block (" + ",".join(map(str, block)) + ")")
        if thread is not None:
            parts.append("thread (" + ",".join(map(str, thread)) + ")")
        if address is not None:
            parts.append(f"address {address:#x}")
        src = f": `{source}`" if source else ""
        super().__init__(f"{message} [{', '.join(parts)}]{src}")


class DeadlockError(KernelFault):
    """A block can make no progress: a barrier that not every thread of the block reaches."""


class SimulationLimitError(GpusimError):
    """The timing model passed its cycle limit (`max_cycles`, or the longest kernel it simulates, 2^30 - 2
    cycles); the message says which warps were still resident, where (pc and source line) and on what
    they waited."""

    def __init__(self, message: str, *, cycle: int = 0, stuck: list | None = None):
        self.cycle, self.stuck = cycle, stuck or []
        super().__init__(message)


class WorkloadError(GpusimError):
    """A workload folder is malformed (missing kernel, bad launch expression, bad parameter)."""


class VerificationError(GpusimError):
    """A kernel's outputs disagree with the workload's numpy reference."""

    def __init__(self, message: str, *, mismatches: dict | None = None):
        self.mismatches = mismatches or {}
        super().__init__(message)

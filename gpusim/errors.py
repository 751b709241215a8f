"""gpusim's own error types. Each carries where the problem is (file:line, kernel pc, launch field)
so that the CLI can print it on one line and exit non-zero."""

from __future__ import annotations


class GpusimError(Exception):
    """Base class of every error gpusim raises on bad input or a kernel that cannot finish.

    An error is rebuilt exactly from its `args` (`type(e)(*e.args)`: SimPy does this when a process
    fails, and pickling does it across a process pool), so its location survives both: subclasses take
    their location as positional-or-keyword parameters and keep them all in `args`."""

    _text = None

    def _located(self, text: str, *args) -> None:
        """Keep `args` (every parameter, in order) for rebuilding, and `text` as the message."""
        Exception.__init__(self, *args)
        self._text = text

    def __str__(self) -> str:
        return self._text if self._text is not None else super().__str__()


class ConfigError(GpusimError):
    """A hardware configuration (YAML) is malformed or impossible: `file:line: field: what is wrong`."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.file, self.line, self.field, self.reason = file, line, field, message
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        self._located(f"{where}{field + ': ' if field else ''}{message}", message, file, line, field)


class AssemblyError(GpusimError):
    """A kernel's text does not assemble: `file:line:col: message (token 'x')`."""

    def __init__(self, message: str, file: str = "<string>", line: int = 0, col: int = 0,
                 token: str | None = None):
        self.file, self.line, self.col, self.token, self.reason = file, line, col, token, message
        tok = f" (at '{token}')" if token else ""
        self._located(f"{file}:{line}:{col}: {message}{tok}", message, file, line, col, token)


class LaunchError(GpusimError):
    """A launch cannot run as asked: bad grid/block, too much shared memory, a missing parameter."""

    def __init__(self, message: str, field: str | None = None):
        self.field, self.reason = field, message
        self._located(f"launch: {field + ': ' if field else ''}{message}", message, field)


class KernelFault(GpusimError):
    """A kernel did something the hardware would trap on (out-of-bounds or misaligned address, a
    runaway loop). Names the kernel and its file, pc, source line, block and thread."""

    def __init__(self, message: str, kernel: str = "", pc: int = -1, line: int = 0,
                 source: str = "", block: tuple | None = None, thread: tuple | None = None,
                 address: int | None = None, file: str | None = None):
        self.kernel, self.pc, self.line, self.source, self.file = kernel, pc, line, source, file
        self.block, self.thread, self.address, self.reason = block, thread, address, message
        name = f"kernel {kernel}" if kernel else "kernel"
        parts = [f"{name} ({file})" if file else name, f"pc {pc}", f"line {line}"]
        if block is not None:
            parts.append("block (" + ",".join(map(str, block)) + ")")
        if thread is not None:
            parts.append("thread (" + ",".join(map(str, thread)) + ")")
        if address is not None:
            parts.append(f"address {address:#x}")
        src = f": `{source}`" if source else ""
        self._located(f"{message} [{', '.join(parts)}]{src}", message, kernel, pc, line, source, block, thread,
                      address, file)


class DeadlockError(KernelFault):
    """A block can make no progress: a barrier that not every thread of the block reaches."""


class SimulationLimitError(GpusimError):
    """The timing model passed its cycle limit (`max_cycles`, or the longest kernel it simulates, 2^30 - 2
    cycles); the message says which warps were still resident, where (pc and source line) and on what
    they waited."""

    def __init__(self, message: str, cycle: int = 0, stuck: list | None = None):
        self.cycle, self.stuck = cycle, stuck or []
        self._located(message, message, cycle, stuck)


class WorkloadError(GpusimError):
    """A workload folder is malformed (missing kernel, bad launch expression, bad parameter)."""


class VerificationError(GpusimError):
    """A kernel's outputs disagree with the workload's numpy reference."""

    def __init__(self, message: str, mismatches: dict | None = None):
        self.mismatches = mismatches or {}
        self._located(message, message, mismatches)

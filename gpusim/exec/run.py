"""`gpusim exec`: run a whole CUDA application, host code and all, with every kernel simulated.

    result = run_app(["./app", "arg"], "a100")      # the program's stdout/stderr go where gpusim's go
    result.exit_status, result.total_seconds, [row.cycles for row in result.launches]

The application runs as it is, as a child process, with gpusim's CUDA runtime (exec/shim, built on first
use) first on its library path; each runtime call comes over a Unix socket to a `Session` in this process,
and device memory is a memfd both processes map. See docs/exec.md."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim import progress
from gpusim.config.schema import Config
from gpusim.exec import protocol as P
from gpusim.exec.elf import NotAProgram, read_binary
from gpusim.exec.session import LaunchRow, Session, say
from gpusim.exec.shim import SONAME, ExecError, shim_dir
from gpusim.isa.ptx import demangle
from gpusim.stats.simulate import configure
from gpusim.system import ProgramReport, trace_dict
from gpusim.version import __version__

STATIC_HINT = "nvcc -cudart shared"


@dataclass
class ExecResult:
    """What `gpusim exec` reports of one run of an application."""

    argv: list[str]
    config: str
    exit_status: int
    launches: list[LaunchRow]
    report: ProgramReport | None
    unsupported: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    connected: bool = False

    @property
    def total_seconds(self) -> float:
        """The program's simulated GPU time: from its first GPU operation to its last, copies included."""
        return self.report.seconds if self.report is not None else 0.0

    @property
    def kernel_seconds(self) -> float:
        return sum(r.seconds for r in self.launches)

    def copy_seconds(self) -> float:
        if self.report is None:
            return 0.0
        return sum(r.seconds for r in self.report.records if r.kind in ("copy_h2d", "copy_d2h"))

    def rows(self) -> list[dict[str, Any]]:
        """One row per kernel launch, with when it ran on the program's timeline."""
        out = []
        for row in self.launches:
            d = row.to_dict()
            rec = next((r for r in self.report.records if r.index == row.op), None) if self.report else None
            d["start_seconds"] = rec.start if rec else None
            d["end_seconds"] = rec.end if rec else None
            out.append(d)
        return out

    def to_dict(self) -> dict[str, Any]:
        rep = self.report
        return {
            "mode": "exec", "gpusim_version": __version__, "config": self.config, "argv": list(self.argv),
            "exit_status": self.exit_status, "total_seconds": self.total_seconds,
            "kernel_seconds": self.kernel_seconds, "copy_seconds": self.copy_seconds(),
            "launches": self.rows(), "unsupported_calls": list(self.unsupported), "problems": list(self.problems),
            "wall_seconds": self.wall_seconds,
            "timeline": rep.to_dict() if rep is not None else None,
            "results": [r.result.to_dict() if r.result is not None else None for r in self.launches],
        }

    def table(self) -> str:
        """The launches as a table, then the program's totals."""
        lines = [f"{'#':>4}  {'kernel':<32} {'grid':>14} {'block':>12} {'cycles':>12} {'time (us)':>11}  verdict"]
        for r in self.launches:
            short = demangle(r.kernel).split("(")[0]
            name = short if len(short) <= 32 else short[:29] + "..."
            grid = "x".join(map(str, r.grid))
            block = "x".join(map(str, r.block))
            verdict = "FAULT" if r.fault else r.verdict
            lines.append(f"{r.index:>4}  {name:<32} {grid:>14} {block:>12} {r.cycles:>12,} "
                         f"{r.seconds * 1e6:>11.2f}  {verdict}")
        lines.append(f"{len(self.launches)} kernel launch(es) on {self.config}: kernels "
                     f"{self.kernel_seconds * 1e6:,.2f} us, copies {self.copy_seconds() * 1e6:,.2f} us, "
                     "program's simulated GPU time "
                     f"{self.total_seconds * 1e6:,.2f} us (streams overlapping)")
        return "\n".join(lines)


def resolve(program: str) -> Path:
    """The program's file: a path as given, else the command found on PATH."""
    if os.sep not in program:
        found = shutil.which(program)
        if found is None:
            raise ExecError(f"{program}: no such program (not a file, not on PATH)")
        return Path(found)
    path = Path(program)
    if not path.is_file():
        raise ExecError(f"{program}: no such file")
    if not os.access(path, os.X_OK):
        raise ExecError(f"{program}: not executable (chmod +x {program})")
    return path


def check_program(path: Path) -> str | None:
    """None for a program gpusim can serve, else the one line that says why not (the program still runs)."""
    try:
        binary = read_binary(path)
    except NotAProgram as exc:
        return str(exc)
    if binary.shared_cudart:
        return None
    if binary.defines_cudart or binary.has_kernels:
        return (f"{path}: built with the static CUDA runtime (nvcc's default), which gpusim cannot stand in for; "
                f"rebuild it with `{STATIC_HINT}`")
    return f"{path}: not a CUDA program (it does not link the CUDA runtime, libcudart.so)"


def run_app(argv: list[str], config: Config | str = "a100", *, quiet: bool = False) -> ExecResult:
    """Run `argv` under gpusim on `config`, every kernel simulated; its stdout and stderr are this process's."""
    if not argv:
        raise ExecError("no program to run: gpusim exec [OPTIONS] -- PROGRAM [ARGS]")
    cfg = configure(config)
    path = resolve(argv[0])
    problem = check_program(path)
    lib = shim_dir(quiet=quiet) / SONAME
    session = Session(cfg, program=path.name)
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    mem = session.memory
    env = dict(os.environ)
    env.update({"GPUSIM_EXEC_FD": str(child.fileno()), "GPUSIM_EXEC_MEMFD": str(mem.fd),
                "GPUSIM_EXEC_BASE": hex(mem.base), "GPUSIM_EXEC_SIZE": str(mem.size)})
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(lib.parent)] + [p for p in env.get("LD_LIBRARY_PATH", "")
                                                                   .split(os.pathsep) if p])
    if problem is None:
        env["LD_PRELOAD"] = " ".join([str(lib)] + env.get("LD_PRELOAD", "").split())
    else:
        say(problem)
    t0 = time.perf_counter()
    was = progress.enabled() if hasattr(progress, "enabled") else None
    progress.set_enabled(False)
    try:
        proc = subprocess.Popen([os.path.abspath(path), *argv[1:]], pass_fds=(child.fileno(), mem.fd), env=env)
    except OSError as exc:
        raise ExecError(f"{argv[0]}: cannot run: {exc.strerror or exc}") from None
    finally:
        child.close()
    connected = False
    try:
        while True:
            req = P.read_request(parent)
            if req is None:
                break
            connected = True
            status, words, blob = session.handle(req)
            try:
                P.send_reply(parent, status, words, blob)
            except (BrokenPipeError, ConnectionResetError):
                break
        status = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    finally:
        parent.close()
        if was is not None:
            progress.set_enabled(was)
    if status < 0:
        sig = signal.Signals(-status).name
        line = f"{path.name} was killed by {sig}"
        if sig == "SIGSEGV":
            line += " (a host access to device memory faults, as on a GPU: copy it with cudaMemcpy first)"
        say(line)
        session.problems.append(line)
        status = 128 - status
    report = session.timeline.report()
    result = ExecResult(list(argv), cfg.name, status, session.launches, report, session.unsupported,
                        session.problems, time.perf_counter() - t0, connected)
    if problem is None and not connected and SONAME:
        result.problems.append(f"{path.name} made no CUDA runtime call")
    session.close()
    return result


def write_trace(result: ExecResult, path: str) -> None:
    """The program's timeline as a Chrome trace (chrome://tracing, Perfetto)."""
    import json

    from gpusim.stats.files import write_atomic

    data = trace_dict(result.report) if result.report is not None else {"traceEvents": []}
    write_atomic(path, json.dumps(data))


def program_html(data: dict[str, Any]) -> str:
    """The program section of `gpusim report` for a `gpusim exec --json` file: its launches and totals."""
    from html import escape

    rows = "".join(
        f"<tr><td>{r['launch']}</td><td>{escape(demangle(r['kernel']))}</td><td>{'x'.join(map(str, r['grid']))}</td>"
        f"<td>{'x'.join(map(str, r['block']))}</td><td>{r['cycles']:,}</td><td>{r['seconds'] * 1e6:,.2f}</td>"
        f"<td>{escape(r['verdict'] or ('FAULT' if r['fault'] else ''))}</td></tr>" for r in data["launches"])
    longest = data["launches"][data["longest"]]
    return (f"<h1>{escape(' '.join(data['argv']))} <span class=sub>gpusim exec on {escape(data['config'])}</span></h1>"
            f"<p class=sub>exit status {data['exit_status']}; program's simulated GPU time "
            f"{data['total_seconds'] * 1e6:,.2f} us (kernels {data['kernel_seconds'] * 1e6:,.2f} us, copies "
            f"{data['copy_seconds'] * 1e6:,.2f} us)</p><table><tr><th>#</th><th>kernel</th><th>grid</th>"
            f"<th>block</th><th>cycles</th><th>time (us)</th><th>verdict</th></tr>{rows}</table>"
            f"<p class=note>Below: launch {longest['launch']}, the longest kernel.</p>")

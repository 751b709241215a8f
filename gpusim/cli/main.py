"""`gpusim` command line: a thin layer over the public API. One module a subcommand; each module
has `register(subparsers)` which adds its parser and sets `func` to a function of the parsed args
returning an exit status.

Exit statuses: 0 done; 1 a verification (or a sweep point) failed; 2 bad input (argparse's errors, a
GpusimError, an output path that cannot be written, an OSError: one line, no traceback); 130 interrupted (SIGINT,
Ctrl-C) and 143 terminated (SIGTERM), after the files being written are removed, so that no output
file is left half-written.

Start-up: only the chosen subcommand's module is imported (the others appear in `gpusim --help` from the
table in `commands.py`), and each module imports what is heavy (numpy's users, the timing engine, the
compiler, matplotlib) inside the functions that need it, so that `gpusim --version`, `--help` and the
commands that simulate nothing answer at once (docs/bench.md, start-up)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading

from gpusim import progress
from gpusim.cli.args import Parser, output_problem
from gpusim.cli.commands import COMMANDS
from gpusim.errors import ConfigError, GpusimError
from gpusim.version import __version__

SUBCOMMANDS = list(COMMANDS)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is when it arrives, as Ctrl-C raises KeyboardInterrupt, so that
    whatever cleans up after Ctrl-C (temporary files, worker processes) cleans up after it too."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser (every subcommand's module imported); with `only` a subcommand's name, that module
    alone is imported and registered, the others listed by name and help (what parsing `gpusim ONLY ...`
    needs); with `only` "", none is imported (`gpusim --help`, `--version`)."""
    parser = Parser(prog="gpusim", description="A GPU architecture simulator.")
    parser.add_argument("--version", action="version", version=f"gpusim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        if only is None or name == only:
            importlib.import_module(f"gpusim.cli.{name}_cmd").register(sub)
        else:
            sub.add_parser(name, help=COMMANDS[name])
    return parser


def chosen_command(words: list[str]) -> str:
    """The subcommand the command line names (its first word that is not an option), "" if none: then
    no subcommand's module is needed (`gpusim --help`, `--version`, or an unknown command's error)."""
    first = next((w for w in words if not w.startswith("-")), "")
    return first if first in SUBCOMMANDS else ""


def main(argv: list[str] | None = None) -> int:
    with _signals():
        # named from the command line before parsing, so that a Ctrl-C while the subcommands load
        # reports the command the user typed
        words = sys.argv[1:] if argv is None else argv
        chosen = chosen_command(list(words))
        command = f"gpusim {chosen}" if chosen and words[0] == chosen else "gpusim"
        try:
            args = build_parser(chosen).parse_args(argv)
            command = f"gpusim {args.command}"
            if getattr(args, "quiet", False):
                progress.set_enabled(False)
            problem = output_problem(args)
            if problem is not None:
                print(f"{command}: error: {problem}", file=sys.stderr)
                return 2
            return int(args.func(args) or 0)
        except KeyboardInterrupt as exc:
            return _stopped(command, exc)
        except Exception as exc:
            stop = signal_behind(exc)
            if stop is not None:
                return _stopped(command, stop)
            if isinstance(exc, GpusimError):
                print(f"{command}: error: {_described(exc)}", file=sys.stderr)
                return 2
            if isinstance(exc, BrokenPipeError):
                return 0
            if isinstance(exc, OSError):  # the file system changed under a checked path (full disk, lost permission)
                print(f"{command}: error: {exc}", file=sys.stderr)
                return 2
            raise


def signal_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM that caused `exc`, if one did. A signal's exception that lands inside code
    called back from C (Numba loading a cached function, which unpickles) comes out wrapped: Numba raises
    `SystemError: ... returned a result with an exception set` from it. The signal is still what stopped
    the command, so it is found along the chain of causes."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _stopped(command: str, exc: KeyboardInterrupt) -> int:
    terminated = isinstance(exc, Terminated)
    notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))
    print(f"{command}: {'terminated' if terminated else 'interrupted'}{notes}", file=sys.stderr)
    return 143 if terminated else 130


def _described(exc: GpusimError) -> str:
    """An error as the command line shows it: a config override's names the flag that gave it
    (`--config-set dram.t_cl_ns: ...`), not the API's `<overrides>`."""
    from gpusim.config.overrides import OVERRIDE_FILE

    if isinstance(exc, ConfigError) and exc.file == OVERRIDE_FILE:
        return f"--config-set {exc.field}: {exc.reason}" if exc.field else f"--config-set: {exc.reason}"
    return str(exc)


@contextlib.contextmanager
def _signals():
    """SIGINT raises KeyboardInterrupt and SIGTERM Terminated, once: a second signal while the first
    one's exception unwinds (removing temporary files, stopping workers) is ignored, so it cannot
    interrupt the cleaning up. The previous handlers are restored on the way out."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers belong to the main thread
        yield
        return

    def handler(signum, frame):
        # An exception raised inside a finalizer (`__del__`: llvmlite frees the engine's compiled objects
        # that way) is printed and dropped by Python, and the signal would be lost: arriving there, the
        # signal is sent again a moment later, to land in ordinary code.
        f = frame
        while f is not None:
            if f.f_code.co_name == "__del__":
                again = threading.Timer(0.05, os.kill, (os.getpid(), signum))
                again.daemon = True
                again.start()
                return
            f = f.f_back
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


if __name__ == "__main__":
    sys.exit(main())

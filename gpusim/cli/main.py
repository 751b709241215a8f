"""`gpusim` command line: a thin layer over the public API. One module a subcommand; each module
has `register(subparsers)` which adds its parser and sets `func` to a function of the parsed args
returning an exit status.

Exit statuses: 0 done; 1 a verification (or a sweep point) failed; 2 bad input (argparse's errors, a
GpusimError, an output path that cannot be written, an OSError: one line, no traceback); 130 interrupted (SIGINT,
Ctrl-C) and 143 terminated (SIGTERM), after the files being written are removed, so that no output
file is left half-written."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading

import gpusim
from gpusim import progress
from gpusim.cli.args import Parser, output_problem
from gpusim.config.overrides import OVERRIDE_FILE
from gpusim.errors import ConfigError, GpusimError

SUBCOMMANDS = ["run", "info", "occupancy", "asm", "list", "bench", "sweep", "plot", "report", "step", "compile",
               "compare", "program", "validate"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is when it arrives, as Ctrl-C raises KeyboardInterrupt, so that
    whatever cleans up after Ctrl-C (temporary files, worker processes) cleans up after it too."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="gpusim", description="A GPU architecture simulator.")
    parser.add_argument("--version", action="version", version=f"gpusim {gpusim.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"gpusim.cli.{name}_cmd").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    with _signals():
        # named from the command line before parsing, so that a Ctrl-C while the subcommands load
        # reports the command the user typed
        words = sys.argv[1:] if argv is None else argv
        command = f"gpusim {words[0]}" if words and words[0] in SUBCOMMANDS else "gpusim"
        try:
            args = build_parser().parse_args(argv)
            command = f"gpusim {args.command}"
            if getattr(args, "quiet", False):
                progress.set_enabled(False)
            problem = output_problem(args)
            if problem is not None:
                print(f"{command}: error: {problem}", file=sys.stderr)
                return 2
            return int(args.func(args) or 0)
        except GpusimError as exc:
            print(f"{command}: error: {_described(exc)}", file=sys.stderr)
            return 2
        except BrokenPipeError:
            return 0
        except OSError as exc:  # the file system changed under a checked path (full disk, lost permission)
            print(f"{command}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, Terminated)
            notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))
            print(f"{command}: {'terminated' if terminated else 'interrupted'}{notes}", file=sys.stderr)
            return 143 if terminated else 130


def _described(exc: GpusimError) -> str:
    """An error as the command line shows it: a config override's names the flag that gave it
    (`--config-set dram.t_cl_ns: ...`), not the API's `<overrides>`."""
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

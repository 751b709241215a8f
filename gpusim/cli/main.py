"""`gpusim` command line: a thin layer over the public API. One module a subcommand; each module
has `register(subparsers)` which adds its parser and sets `func` to a function of the parsed args
returning an exit status."""

from __future__ import annotations

import argparse
import importlib
import sys

from gpusim.errors import GpusimError

SUBCOMMANDS = ["run", "info", "occupancy", "asm", "list", "bench", "sweep", "plot", "compile", "compare", "program"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpusim", description="A GPU architecture simulator.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"gpusim.cli.{name}_cmd").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GpusimError as exc:
        print(f"gpusim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

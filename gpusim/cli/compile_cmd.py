"""`gpusim compile`: placeholder while the subcommand is being built."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("compile", help="(being built)")
    p.set_defaults(func=lambda args: 1)

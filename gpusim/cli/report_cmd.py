"""`gpusim report RESULT.json`: a self-contained HTML report of a simulated kernel (gpusim.plot.report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpusim.cli.args import add_output
from gpusim.cli.commands import COMMANDS
from gpusim.errors import GpusimError


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help=COMMANDS["report"],
                              description="Write one HTML file of a result written by `gpusim run --json`: the "
                                          "verdict with its evidence, the key metrics, the warp states per "
                                          "issued instruction, the charts (inline SVG), occupancy and, when the "
                                          "result has it, the source view. Nothing in it is fetched from the "
                                          "network. See docs/stats.md.")
    p.add_argument("result", metavar="RESULT.json", help="a result written by `gpusim run --json`")
    add_output(p, "--output", "-o", metavar="FILE", help="the HTML file to write (default: RESULT.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpusim.plot import load_input  # matplotlib loads only when a report is drawn
    from gpusim.plot.report import write_report

    out = args.output or str(Path(args.result).with_suffix(".html"))
    program = exec_result(args.result)
    if program is not None:  # gpusim exec --json: the program's launches, then its longest kernel's report
        from gpusim.exec.run import program_html

        write_report(program["results"][program["longest"]], out, before=program_html(program))
        print(f"wrote {out}")
        return 0
    result = load_input(args.result)
    if not isinstance(result, dict):
        raise GpusimError(f"{args.result}: a sweep table; `gpusim report` reads one result (gpusim run --json)")
    write_report(result, out)
    print(f"wrote {out}")
    return 0


def exec_result(path: str) -> dict | None:
    """A `gpusim exec --json` file's dict with `longest` (its longest kernel that ran) set, else None."""
    import json

    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None  # (load_input says what is wrong)
    if not isinstance(data, dict) or data.get("mode") != "exec":
        return None
    ran = [i for i, r in enumerate(data.get("results") or []) if r]
    if not ran:
        raise GpusimError(f"{path}: the program ran no kernel to completion: nothing to report")
    data["longest"] = max(ran, key=lambda i: data["launches"][i]["cycles"])
    return data

"""What every subcommand's arguments share: numeric flags checked against their range while argparse
parses them (`integer`, `number`), and output paths declared with `add_output` and checked by
`output_problem` before any work starts. Each problem is one argparse-style line naming the flag:
`gpusim run: error: argument --max-cycles: -5 is below the minimum 1`,
`gpusim run: error: argument --json: out/: is a folder`; the exit status is 2."""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MAX_COUNT", "VOCABULARY", "Output", "Parser", "add_config", "add_config_set", "add_csv", "add_json",
           "add_metric", "add_output", "add_params", "add_quiet", "add_renamed", "integer", "integers", "number",
           "output_problem"]

MAX_COUNT = 2**63 - 1  # the largest count or seed any flag takes: a signed 64-bit integer
IMAGE_SUFFIXES = (".png", ".svg")  # gpusim.plot.io.FORMATS, without importing matplotlib
OUTPUTS = "_outputs"  # the parsed namespace's attribute listing the subcommand's output flags
_SHOWN = 40  # characters of a bad value quoted in a message


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line and a pointer to the help, as every other bad input's:
    `gpusim run: error: argument --max-cycles: -1 is below the minimum 1` then `see gpusim run --help`
    (not the whole usage block first); exit status 2. Subcommands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\nsee {self.prog} --help\n")


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def _in_range(value, text: str, lo, hi):
    if value < lo:
        raise argparse.ArgumentTypeError(f"{text} is below the minimum {lo:g}")
    if value > hi:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is above the maximum {hi:g}")
    return value


def integer(lo: int, hi: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse `type`: a decimal integer from `lo` to `hi`."""

    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if len(digits) > 30 and digits.isdigit():  # past int64 (and int()'s 4300-digit limit)
            raise argparse.ArgumentTypeError(f"{_shown(text)} is out of range ({lo} to {hi})")
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not an integer") from None
        return _in_range(value, text.strip(), lo, hi)

    parse.__name__ = "integer"
    return parse


def integers(lo: int, hi: int = MAX_COUNT) -> Callable[[str], list[int]]:
    """An argparse `type`: a comma-separated list of integers from `lo` to `hi` (`1,2,4,8`)."""
    one = integer(lo, hi)

    def parse(text: str) -> list[int]:
        return [one(item) for item in text.split(",")]

    parse.__name__ = "integers"
    return parse


def number(lo: float, hi: float) -> Callable[[str], float]:
    """An argparse `type`: a finite number (`1e6`, `262144`) from `lo` to `hi`."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number") from None
        if math.isnan(value):
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number")
        return _in_range(value, text.strip(), lo, hi)

    parse.__name__ = "number"
    return parse


@dataclass(frozen=True, slots=True)
class Output:
    """An output flag: where its value lands in the namespace, its name(s) for messages, and what it
    names: a file, an image (.png/.svg) or a folder (created when missing)."""

    dest: str
    flag: str
    kind: str = "file"


def add_output(parser: argparse.ArgumentParser, *flags: str, kind: str = "file", **kwargs) -> argparse.Action:
    """`parser.add_argument(*flags, **kwargs)` for an output path, recorded so that `output_problem`
    checks it before the subcommand runs."""
    action = parser.add_argument(*flags, **kwargs)
    declared = parser.get_default(OUTPUTS) or ()
    parser.set_defaults(**{OUTPUTS: (*declared, Output(action.dest, "/".join(action.option_strings), kind))})
    return action


def output_problem(args: argparse.Namespace) -> str | None:
    """The first problem with the parsed output paths, as `argument FLAG: PATH: what is wrong`, or
    None. '-' (stdout) is fine for a file, once."""
    stdout: list[str] = []
    seen: dict[str, str] = {}
    for out in getattr(args, OUTPUTS, ()):
        value = getattr(args, out.dest, None)
        if value is None:
            continue
        if value == "-" and out.kind == "file":
            if stdout:
                return f"argument {out.flag}: {stdout[0]} writes to stdout ('-') already"
            stdout.append(out.flag)
            continue
        problem = _folder_problem(value) if out.kind == "folder" else _file_problem(value, out.kind == "image")
        if problem is None and out.kind != "folder":
            key = os.path.realpath(value)
            problem = f"{seen[key]} writes this file already" if key in seen else None
            seen[key] = out.flag
        if problem is not None:
            return f"argument {out.flag}: {value}: {problem}"
    return None


def _file_problem(path: str, image: bool) -> str | None:
    """Why `path` cannot be written as gpusim.stats.files.write_atomic writes it (a temporary file
    beside it, then a rename), or None."""
    if not path:
        return "an empty path"
    if image and os.path.splitext(path)[1].lower() not in IMAGE_SUFFIXES:
        return "unknown image format; name the file .png or .svg"
    if os.path.isdir(path):
        return "is a folder"
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return _missing_folder(folder)
    if os.path.lexists(path):
        if not os.path.isfile(path):
            return "exists and is not a regular file"
        if not os.access(path, os.W_OK):
            return "the file is read-only"
    return _probe(folder, f".{os.path.basename(path)}.")


def _folder_problem(path: str) -> str | None:
    """Why `path` cannot be (or become) a folder gpusim writes files in, or None."""
    if not path:
        return "an empty path"
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        return _probe(path, ".gpusim-")
    if os.path.lexists(path):
        return "is a file, not a folder"
    ancestor = _existing_ancestor(path)
    return _probe(ancestor, ".gpusim-") if os.path.isdir(ancestor) else f"{ancestor} is a file, not a folder"


def _missing_folder(folder: str) -> str:
    ancestor = _existing_ancestor(folder)
    if os.path.isdir(ancestor):
        return f"the folder {folder} does not exist"
    return f"{ancestor} is a file, not a folder"


def _existing_ancestor(path: str) -> str:
    """The longest prefix of `path` that exists (at worst the root or the working directory)."""
    while path and not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path or "."


def _probe(folder: str, prefix: str) -> str | None:
    """Create and delete a file in `folder` the way write_atomic would: its error, or None."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
    except OSError as exc:
        return f"cannot write in {folder}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(tmp)
    return None


# -- one vocabulary ------------------------------------------------------------------------------------
# Every subcommand names the same thing with the same flag, defined once here (tests/cli/test_vocabulary.py
# checks every subcommand against it; docs/cli.md lists it).
VOCABULARY = {
    "--config": "the config(s) to run on: a built-in name or a YAML path (comma-separated where a command "
                "takes several)",
    "--config-set": "a config field, FIELD=VALUE (repeatable; in a sweep, FIELD=V1,V2 sweeps it)",
    "--set": "a parameter of what runs (workload, program or model), PARAM=VALUE (repeatable; in a sweep, "
             "PARAM=V1,V2 sweeps it)",
    "--warp-scheduler": "the warp-scheduler policy (default: the config's scheduler.policy)",
    "--json": "write JSON to FILE, or to stdout with '-' or no FILE",
    "--csv": "write CSV to FILE ('-': stdout)",
    "--quiet": "no progress bars",
    "--seed": "seed of the input generator",
    "--metric": "what 'best' means: time (the default) or energy; compile's --objective takes the same words",
}
RENAMED = {"--configs": "--config", "--config-override": "--config-set", "--param": "--set",
           "--scheduler": "--warp-scheduler (the Dask scheduler's address is --dask-scheduler)"}


def add_config(p: argparse.ArgumentParser, *, default: str | None = "a100", several: bool = False,
               help: str | None = None) -> argparse.Action:
    """`--config/-c`: a built-in config name or YAML path (several, comma-separated, where `several`)."""
    what = "built-in config names or YAML paths, comma-separated" if several else "built-in config name or YAML path"
    return p.add_argument("--config", "-c", default=default, metavar="NAME[,NAME...]" if several else "NAME",
                          help=help or f"{what} (default {default})")


def add_config_set(p: argparse.ArgumentParser, *, lists: bool = False, help: str | None = None) -> argparse.Action:
    """`--config-set FIELD=VALUE` (repeatable), a field of the config, dotted (`chip.sm_count`) or its unique
    last name; with `lists`, `FIELD=V1,V2` sweeps it."""
    return p.add_argument("--config-set", action="append", dest="config_sets",
                          metavar="FIELD=V[,V...]" if lists else "FIELD=VALUE",
                          help=help or ("a config field to sweep, FIELD=V1,V2 (repeatable)" if lists else
                                        "override a config field, e.g. --config-set chip.sm_count=54 (repeatable)"))


def add_params(p: argparse.ArgumentParser, *, lists: bool = False, help: str | None = None) -> argparse.Action:
    """`--set PARAM=VALUE` (repeatable): a parameter of what runs; with `lists`, `PARAM=V1,V2` sweeps it."""
    return p.add_argument("--set", action="append", dest="sets", metavar="PARAM=V[,V...]" if lists else "PARAM=VALUE",
                          help=help or "a parameter, e.g. --set n=4096 (repeatable)")


def add_json(p: argparse.ArgumentParser, help: str | None = None) -> argparse.Action:
    """`--json [FILE|-]`: JSON to FILE, or to stdout."""
    return add_output(p, "--json", nargs="?", const="-", metavar="FILE",
                      help=help or "write the result as JSON to FILE ('-' or no FILE: stdout)")


def add_csv(p: argparse.ArgumentParser, help: str | None = None) -> argparse.Action:
    return add_output(p, "--csv", metavar="FILE", help=help or "write the table as CSV to FILE ('-': stdout)")


# gpusim.stats.ranking.METRICS, spelled here so that `--help` imports no stats (tests/cli/test_startup.py checks
# that the two agree)
METRICS = ("time", "energy")


def add_metric(p: argparse.ArgumentParser, help: str, flag: str = "--metric") -> argparse.Action:
    """`--metric time|energy`: what "best" means (gpusim compare, gpusim sweep): least time or least energy;
    `gpusim compile --objective` takes the same two words (what the tuner minimises)."""
    return p.add_argument(flag, choices=METRICS, default="time", help=help)


def add_quiet(p: argparse.ArgumentParser) -> argparse.Action:
    """`--quiet/-q`: no progress bars (gpusim.progress)."""
    return p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")


class _Renamed(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        raise argparse.ArgumentError(self, f"renamed: use {self.default}")


def add_renamed(p: argparse.ArgumentParser, *flags: str, to: str | None = None) -> None:
    """Flags an older gpusim took, hidden: each is refused with the one that replaced it (`to`, else
    RENAMED's entry)."""
    for flag in flags:
        p.add_argument(flag, action=_Renamed, nargs="?", default=to or RENAMED[flag], dest=f"_renamed_{flag[2:]}",
                       help=argparse.SUPPRESS)

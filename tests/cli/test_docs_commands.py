"""Every `gpusim` command in README.md and docs/*.md, extracted from the fenced shell blocks and run from
an empty temporary directory, in the order its page gives them (a later command may read what an
earlier one wrote), with the page's shell variables ($R, $ALL) set. A synopsis (a line with `[...]`,
`a|b` or an upper-case placeholder such as WORKLOAD or FILE.yaml) is not a command and is skipped; a
command that takes minutes (SLOW) is parsed with the real argument parser instead, which catches a
renamed or removed flag, and runs with GPUSIM_DOC_COMMANDS=all. A command the page says fails
(EXPECTED_STATUS) must fail with that status."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCKS = ("", "bash", "sh", "shell", "console")
ASSIGNMENT = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")
PLACEHOLDER = re.compile(r"(?<![\w./-])(?:[A-Z][A-Z_]{2,}(?:\.[a-z]+)?)(?![\w])")

# Commands that take minutes: parsed here, run with GPUSIM_DOC_COMMANDS=all (fragments of the command).
SLOW = ("gpusim bench", "program transformer_layer", "gpusim compare", "--tune", "--sample auto",
        "--sample on", "validate --config h200", "compile model.onnx", "--cost simulated", "--cost calibrated")
# Commands the page says stop with an error (fragment -> exit status).
EXPECTED_STATUS = {"--max-cycles 5000": 2}
ALL = os.environ.get("GPUSIM_DOC_COMMANDS") == "all"


def _blocks(page: Path):
    for m in re.finditer(r"```(\w*)\n(.*?)```", page.read_text(), re.S):
        if m.group(1) in SHELL_BLOCKS:
            yield m.group(2)


def _lines(block: str):
    """Logical lines of a shell block: continuations joined, `$ ` prompts and trailing comments dropped."""
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        i += 1
        line = line.removeprefix("$ ")
        line = re.split(r"\s{2,}#|\s#\s", line)[0].strip()
        if line:
            yield line


def _is_synopsis(cmd: str) -> bool:
    unquoted = re.sub(r"\"[^\"]*\"|'[^']*'", "", cmd)
    return "[" in unquoted or "|" in unquoted.replace("||", "") or bool(PLACEHOLDER.search(unquoted))


def page_commands(page: Path) -> list[tuple[str, dict[str, str]]]:
    """The page's gpusim commands, each with the shell variables assigned before it on the page."""
    env: dict[str, str] = {}
    out = []
    for block in _blocks(page):
        for line in _lines(block):
            m = ASSIGNMENT.match(line)
            if m:
                env[m.group(1)] = m.group(2)
            elif line.startswith("gpusim ") and not _is_synopsis(line):
                out.append((line, dict(env)))
    return out


CASES = [(page, cmd, env) for page in PAGES for cmd, env in page_commands(page)]


def test_the_pages_have_commands():
    assert len(CASES) >= 40 and {p.name for p, _, _ in CASES} >= {"README.md", "plots.md", "config.md"}


def _expand(text: str, env: dict[str, str]) -> str:
    """$NAME and ${NAME} replaced from `env`, whose values may name each other."""
    for _ in range(5):
        text = re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: env.get(m.group(1) or m.group(2), ""), text)
    return text


def _argvs(cmd: str, env: dict[str, str]) -> list[list[str]]:
    """The gpusim argument vectors of a line (`a && b` is two), variables expanded."""
    return [shlex.split(_expand(part, env))[1:] for part in cmd.split("&&") if part.strip().startswith("gpusim")]


@pytest.fixture(scope="module")
def folders():
    """page name -> its folder: one empty folder per page, used by the page's commands in order."""
    return {}


@pytest.mark.parametrize(("page", "cmd", "env"), CASES,
                         ids=[f"{p.name}:{i}" for i, (p, _, _) in enumerate(CASES)])
def test_documented_command(page, cmd, env, folders, tmp_path_factory):
    from gpusim.cli.main import build_parser

    folder = folders.setdefault(page.name, tmp_path_factory.mktemp(page.stem))
    (folder / "docs" / "images").mkdir(parents=True, exist_ok=True)
    env = {**env, "R": str(folder / "results")}  # (the page's results folder, inside this one)
    Path(env["R"]).mkdir(exist_ok=True)
    if any(s in cmd for s in SLOW) and not ALL:
        for argv in _argvs(cmd, env):  # the real parser: a renamed or missing flag fails here
            build_parser().parse_args(argv)
        return
    status = next((s for frag, s in EXPECTED_STATUS.items() if frag in cmd), 0)
    script = "\n".join(['gpusim() { "$GPUSIM_PYTHON" -m gpusim "$@"; }',
                        *(f"{k}={shlex.quote(_expand(v.strip(chr(34)), env))}" for k, v in env.items()), cmd])
    done = subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "GPUSIM_PROGRESS": "0", "GPUSIM_PYTHON": sys.executable})
    assert done.returncode == status, f"{page.name}: `{cmd}` exited {done.returncode}:\n{done.stderr[-2000:]}"
    if status:
        assert "Traceback" not in done.stderr

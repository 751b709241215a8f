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


def _slow(cmd: str) -> bool:
    """A command that takes minutes: a SLOW fragment, or whole-kernel validation beyond the small size
    (`validate --kernels` simulates every measured size, the large ones sampled: tens of minutes)."""
    return any(s in cmd for s in SLOW) or ("validate --kernels" in cmd and "--size small" not in cmd)


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


COMMANDS = {page.name: page_commands(page) for page in PAGES}
# (page, command, its variables, its place among the page's commands)
CASES = [(page, cmd, env, k) for page in PAGES for k, (cmd, env) in enumerate(COMMANDS[page.name])]


def test_the_pages_have_commands():
    assert len(CASES) >= 40 and {p.name for p, _, _, _ in CASES} >= {"README.md", "plots.md", "config.md"}


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
    """page name -> [its folder, how many of its commands have run there]: one empty folder per page, used
    by the page's commands in order."""
    return {}


def _page_env(env: dict[str, str], folder: Path) -> dict[str, str]:
    env = {**env, "R": str(folder / "results")}  # (the page's results folder, inside this one)
    Path(env["R"]).mkdir(exist_ok=True)
    return env


def _shell(cmd: str, env: dict[str, str], folder: Path) -> subprocess.CompletedProcess:
    script = "\n".join(['gpusim() { "$GPUSIM_PYTHON" -m gpusim "$@"; }',
                        *(f"{k}={shlex.quote(_expand(v.strip(chr(34)), env))}" for k, v in env.items()), cmd])
    return subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "GPUSIM_PROGRESS": "0", "GPUSIM_PYTHON": sys.executable})


@pytest.mark.parametrize(("page", "cmd", "env", "k"), CASES,
                         ids=[f"{p.name}:{i}" for i, (p, _, _, _) in enumerate(CASES)])
def test_documented_command(page, cmd, env, k, folders, tmp_path_factory):
    from gpusim.cli.main import build_parser

    folder, done_here = folders.setdefault(page.name, [tmp_path_factory.mktemp(page.stem), 0])
    (folder / "docs" / "images").mkdir(parents=True, exist_ok=True)
    # the page's earlier commands that ran elsewhere (another worker of pytest -n, or deselected) run here
    # first, as the page gives them: a command may read what an earlier one wrote
    for earlier, earlier_env in COMMANDS[page.name][done_here:k]:
        if not _slow(earlier) or ALL:
            _shell(earlier, _page_env(earlier_env, folder), folder)
    folders[page.name][1] = k + 1
    env = _page_env(env, folder)
    if _slow(cmd) and not ALL:
        for argv in _argvs(cmd, env):  # the real parser: a renamed or missing flag fails here
            build_parser().parse_args(argv)
        return
    status = next((s for frag, s in EXPECTED_STATUS.items() if frag in cmd), 0)
    done = _shell(cmd, env, folder)
    assert done.returncode == status, f"{page.name}: `{cmd}` exited {done.returncode}:\n{done.stderr[-2000:]}"
    if status:
        assert "Traceback" not in done.stderr


# ---- the numbers README quotes beside its commands are what the commands print (issue 37) ----------------
README = ROOT / "README.md"
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in NUMBER.findall(text)]


def _close(doc: list[float], got: list[float]) -> bool:
    """Each documented number within 1 % of the printed one in the same place."""
    return len(got) >= len(doc) and all(abs(d - g) <= 0.01 * abs(g) for d, g in zip(doc, got, strict=False))


def _gpusim(argv: str, folder: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "gpusim", *shlex.split(argv)[1:]], cwd=folder, capture_output=True,
                          text=True, timeout=1800, env={**os.environ, "GPUSIM_PROGRESS": "0"})
    assert done.returncode == 0, f"`{argv}` exited {done.returncode}:\n{done.stderr[-2000:]}"
    return done.stdout


def _output_blocks(page: Path) -> list[tuple[str, str]]:
    """(command, block) for each fenced block introduced by "`gpusim ...` prints"."""
    text = page.read_text()
    out = []
    for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
        before = text[:m.start()].rstrip().rsplit("\n\n", 1)[-1]
        said = re.search(r"`(gpusim [^`]+)` prints", before)
        if said and m.group(1) == "":
            out.append((said.group(1), m.group(2)))
    return out


def _label(line: str) -> str:
    return re.split(r"\s{2,}|\d", line, maxsplit=1)[0].strip()


@pytest.mark.parametrize(("cmd", "block"), _output_blocks(README), ids=[c for c, _ in _output_blocks(README)])
def test_readme_output_blocks_are_what_the_command_prints(cmd, block, tmp_path):
    if _slow(cmd) and not ALL:
        pytest.skip("a command that takes minutes: GPUSIM_DOC_COMMANDS=all runs it")
    printed = _gpusim(cmd, tmp_path).splitlines()
    for line in block.splitlines():
        shown = line.split("...")[0]
        if not _numbers(shown):
            continue
        match = next((p for p in printed if _label(p) == _label(line)), None)
        assert match is not None, f"README shows `{line}`, but `{cmd}` prints no line labelled {_label(line)!r}"
        assert _close(_numbers(shown), _numbers(match)), f"README: `{line}`\n`{cmd}` prints: `{match}`"


def _commented_commands(page: Path) -> list[tuple[str, str]]:
    """(command, comment) for each gpusim command of the page whose comment quotes numbers."""
    out = []
    for block in _blocks(page):
        for raw in block.splitlines():
            code, sep, comment = raw.partition("  #")
            code = code.strip().removeprefix("$ ")
            if sep and code.startswith("gpusim ") and _numbers(comment):
                out.append((code, comment.strip()))
    return out


@pytest.mark.parametrize(("cmd", "comment"), _commented_commands(README),
                         ids=[c for c, _ in _commented_commands(README)])
def test_numbers_in_readme_comments_are_printed(cmd, comment, tmp_path):
    if _slow(cmd) and not ALL:
        pytest.skip("a command that takes minutes: GPUSIM_DOC_COMMANDS=all runs it")
    printed = _numbers(_gpusim(cmd, tmp_path))
    for n in _numbers(comment):
        assert any(abs(n - p) <= 0.01 * abs(p) for p in printed), f"README: `{cmd}  {comment}`: {n:g} is not printed"


def test_readme_python_prints_what_its_comment_says(capsys):
    """The README's `print(...)  # values` lines, run with the lines of their block before them."""
    checked = 0
    for m in re.finditer(r"```python\n(.*?)```", README.read_text(), re.S):
        lines = m.group(1).splitlines()
        for i, line in enumerate(lines):
            code, sep, comment = line.partition("  #")
            if not (sep and code.strip().startswith("print(") and _numbers(comment)):
                continue
            exec(compile("\n".join([*lines[:i], code]), "README.md", "exec"), {})  # noqa: S102
            printed, said = capsys.readouterr().out.split(), comment.split()
            assert len(printed) == len(said), f"README: {line}\nprints: {' '.join(printed)}"
            for p, c in zip(printed, said, strict=True):
                same = _close(_numbers(c), _numbers(p)) if _numbers(c) else p == c
                assert same, f"README: {line}\nprints: {' '.join(printed)}"
            checked += 1
    assert checked >= 1


def test_readme_bench_table_has_the_pinned_cycles():
    from gpusim.cli.bench_cmd import PINNED_CYCLES

    rows = {m.group(1): _numbers(m.group(2)) for m in re.finditer(r"^\| (\w+) \|([^\n]*)$", README.read_text(), re.M)}
    assert {name: rows[name][1] for name in PINNED_CYCLES} == PINNED_CYCLES


def test_readme_shows_every_subcommand_and_no_page_repeats_a_section():
    from gpusim.cli.main import SUBCOMMANDS

    shown = {cmd.split()[1] for cmd, _ in page_commands(README)}
    assert set(SUBCOMMANDS) - shown == set(), "README runs no example of these subcommands"
    for page in PAGES:
        heads = re.findall(r"^#+ .*$", page.read_text(), re.M)
        assert len(heads) == len(set(heads)), f"{page.name} repeats a section: {heads}"

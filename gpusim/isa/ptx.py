"""PTX reader: the PTX that nvcc emits for ordinary kernels (PTX ISA 8.x-9.0, sm_75-sm_90) -> a gpusim
Program, the representation the `.sasm` assembler produces, so the functional executor and the timing
model run it unchanged.

gpusim's ISA is PTX-shaped, so reading PTX is mostly a matter of choosing the kernel, dropping what
does not change a result (`.ftz`, cache operators, memory-order and scope qualifiers, member masks'
meaning) and keeping every instruction one gpusim instruction: instruction counts feed the timing
model. Each PTX line becomes the same line of a `.sasm` text that the assembler then reads, so every
Instruction's `line` is its line in the .ptx file and an error points at it; `.loc` gives each
instruction its CUDA source location (`Instruction.loc`). docs/isa.md section "PTX" has the mapping
table. Anything else is the located error `file.ptx:LINE:COL: unsupported PTX instruction 'xyz'`
(or `... directive '.xyz'`), never a crash and never a silent skip."""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from gpusim.errors import AssemblyError
from gpusim.isa.assembler import _lines, assemble
from gpusim.isa.program import Program
from gpusim.isa.types import TYPES

# PTX opcodes the reader takes (each becomes one gpusim instruction of the same name, but `ret` ->
# `exit` and `barrier` -> `bar`); the opcode table (opcodes.py) then checks types and qualifiers.
SUPPORTED = frozenset({
    "mov", "cvt", "cvta", "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "abs", "neg",
    "and", "or", "xor", "not", "shl", "shr", "popc", "setp", "selp", "rcp", "sqrt", "rsqrt", "sin", "cos",
    "ex2", "lg2", "ld", "st", "atom", "red", "shfl", "vote", "bra", "ret", "exit", "bar", "barrier",
    "membar", "fence", "mma", "ldmatrix", "cp", "bfe", "copysign", "testp",
})
# tensor-core and asynchronous-copy opcodes: their `.aligned`, `.ca`/`.cg` are part of the instruction
# (the opcode table requires them), and their `{...}` operands are fragments, not vectors
_TENSOR_OPS = frozenset({"mma", "ldmatrix", "cp"})
# `.L2::128B` (and 64B, 256B) on cp.async / ld: a prefetch of the rest of the L2 sector group, a hint the
# config's caches do not take; `.shared::cta` is `.shared` (the block's own shared memory)
_SPACE_ALIASES = {"shared::cta": "shared"}
# Qualifiers that change nothing gpusim models: flush-to-zero (gpusim keeps subnormals), cache
# operators and eviction hints (the timing model's caches follow the config, not per-access hints),
# memory order and scope of atomics, loads and stores (the functional memory is sequentially
# consistent), `.aligned` of barrier/bar.
_DROP = frozenset({"ftz", "nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "aligned", "relaxed", "acquire",
                   "release", "acq_rel", "weak", "volatile", "sys", "gpu", "cta", "cluster"})
_KEEP_SCOPE = frozenset({"membar", "fence"})  # their scope is their qualifier
_HEADER = (".version", ".target", ".address_size")
_IGNORED_DIRECTIVES = (".pragma", ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".noreturn",
                       ".explicitcluster", ".reqnctapercluster", ".maxclusterrank", ".alias")
_IDENT = r"[A-Za-z_$%][\w$]*"
_ENTRY_RE = re.compile(rf"^(?:\.(?:visible|weak|extern)\s+)*\.entry\s+({_IDENT})\s*(\(?)")
_FUNC_RE = re.compile(r"^(?:\.(?:visible|weak|extern)\s+)*\.func\b")
_PARAM_RE = re.compile(rf"^\.param\s+(\.\w+)\s+({_IDENT})\s*$")
_FILE_RE = re.compile(r'^\.file\s+(\d+)\s+"([^"]*)"')
_LOC_RE = re.compile(r"^\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_INLINED_RE = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_SHARED_DECL_RE = re.compile(
    rf"^(?:\.extern\s+)?\.shared\s+(?:\.align\s+(\d+)\s+)?(\.\w+)\s+({_IDENT})\s*\[\s*(\d*)\s*\]$")
# linkage of a module-scope variable (`.visible .shared`, Numba's `.common .global`): one module is one
# program here, so linkage changes nothing
_LINKAGE_RE = re.compile(r"^(?:\.(?:visible|weak|common)\s+)+")
_GLOBAL_DECL_RE = re.compile(rf"^\.global\s+(?:\.align\s+\d+\s+)?\.\w+\s+({_IDENT})")
_ONE_VEC_RE = re.compile(r"\{\s*(%[\w$]+)\s*\}")  # `{ %r1 }`: a one-element vector (Triton's inline asm)
_SPACE_QUALS = frozenset({"global", "shared", "param", "local", "const"})
_ALIGN = r"(?:\.align\s+(\d{1,9})\s+)?"
_CONST_DECL_RE = re.compile(rf"^\.const\s+{_ALIGN}\.(\w+)\s+({_IDENT})\s*(?:\[\s*(\d{{0,9}})\s*\])?\s*(?:=\s*(.*))?$")
_LOCAL_DECL_RE = re.compile(rf"^\.local\s+{_ALIGN}\.(\w+)\s+({_IDENT})\s*(?:\[\s*(\d{{1,9}})\s*\])?$")
_NTID_RE = re.compile(r"\.(?:reqntid|maxntid)\s+(\d{1,9})(?:\s*,\s*(\d{1,9}))?(?:\s*,\s*(\d{1,9}))?")
# the CUDA programming model's largest block (every compute capability since 2.0), which `.local` frames are
# laid out for when neither the launch nor .reqntid/.maxntid says less
MAX_BLOCK_THREADS = 1024
CONST_BANK_BYTES = 65536  # PTX's .const space: 64 KB for a module's variables (PTX ISA, "Constant State Space")
_LTID = "%__ltid"  # the scratch register of a thread's index in its block (local frames)
_MEM_OPS = ("ld", "st", "atom", "red")


@dataclass(frozen=True, slots=True)
class PtxEntry:
    """A kernel of a PTX module: its mangled name, the demangled name and where `.entry` stands."""

    mangled: str
    name: str
    line: int


def demangle(mangled: str) -> str:
    """The qualified name of an Itanium-mangled C++ function (`_Z6vecaddPKfS0_Pfj` -> `vecadd`,
    `_ZN2ns4axpyEPf` -> `ns::axpy`), without its parameter list; a name that is not mangled (an
    `extern "C"` kernel) is returned as it is."""
    if not mangled.startswith("_Z"):
        return mangled
    i, nested, parts = 2, mangled[2:3] == "N", []
    if nested:
        i += 1
        while i < len(mangled) and mangled[i] in "rVK":
            i += 1
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        n = int(mangled[i:j])
        if n == 0 or j + n > len(mangled):
            break
        parts.append(mangled[j:j + n])
        i = j + n
        if not nested:
            break
    return "::".join(parts) or mangled


def _code(text: str) -> list[str]:
    """The source's lines with `//` and `/* */` comments blanked (columns kept; strings respected)."""
    out, in_block = [], False
    for raw in _lines(text):
        chars, i, in_str = list(raw), 0, False
        while i < len(chars):
            c = chars[i]
            if in_block:
                if raw.startswith("*/", i):
                    chars[i] = chars[i + 1] = " "
                    in_block = False
                    i += 2
                    continue
                chars[i] = " "
            elif in_str:
                in_str = c != '"'
            elif c == '"':
                in_str = True
            elif raw.startswith("//", i):
                chars[i:] = " " * (len(chars) - i)
                break
            elif raw.startswith("/*", i):
                chars[i] = chars[i + 1] = " "
                in_block = True
                i += 2
                continue
            i += 1
        out.append("".join(chars).replace("\t", " "))
    return out


class _Reader:
    def __init__(self, text: str, file: str, source_dir: Path | None):
        self.file, self.source_dir = file, source_dir
        self.lines = _code(text)
        self.out = [""] * len(self.lines)  # the .sasm text, line for line
        self.files: dict[int, str] = {}
        self.entries: list[PtxEntry] = []
        self.loc_at: dict[int, tuple[str, int]] = {}  # sasm line -> CUDA source location
        self.nounroll: set[int] = set()  # lines of the instructions a `.pragma "nounroll"` stands before
        self.original: dict[int, str] = {}  # line -> the PTX instruction's text
        self.dynamic: list[tuple[str, int]] = []  # `.extern .shared` arrays (name, alignment): sized at launch
        self.mnemonic: dict[int, str] = {}  # line -> the PTX mnemonic as written
        self.skip: list[tuple[int, int]] = []  # 0-based line ranges of functions and sections
        self._resolved: dict[str, str] = {}
        self.globals: set[str] = set()  # module-scope `.global` variables (declared, not modelled)
        self.shared_names: set[str] = set()  # `.shared` variables, module and kernel scope
        self.shared_regs: set[str] = set()  # registers holding a shared-memory address (see generic_space)
        self.consts: dict[str, tuple[str, bytes | None]] = {}  # `.const` variables: element type, initial bytes
        self.locals: dict[str, tuple[int, int, int]] = {}  # `.local` arrays: alignment, frame bytes, frame stride
        self.local_threads = MAX_BLOCK_THREADS
        self.scope_count = 0  # nested scopes whose registers were renamed (scoped)

    def error(self, msg: str, line: int, col: int, token: str | None = None):
        raise AssemblyError(msg, file=self.file, line=line, col=col, token=token)

    def unsupported(self, what: str, token: str, line: int, col: int):
        self.error(f"unsupported PTX {what} '{token}'", line, col)

    # ---- pass 1: the module's shape --------------------------------------------------------------
    def statements(self, lo: int = 0, hi: int | None = None):
        """(line, col, text) of each `;`-separated statement of lines lo..hi (0-based)."""
        for k in range(lo, len(self.lines) if hi is None else hi):
            code, pos = self.lines[k], 0
            for piece in code.split(";"):
                s = piece.strip()
                if s:
                    yield k + 1, pos + piece.index(s[0]) + 1, s
                pos += len(piece) + 1

    def scan(self) -> list[tuple[int, int, int]]:
        """Find the entries (their header and body line ranges) and the `.file` table."""
        spans, k, n = [], 0, len(self.lines)
        for _line, _col, s in self.statements():
            m = _FILE_RE.match(s)
            if m:
                self.files[int(m.group(1))] = m.group(2)
        while k < n:
            s = self.lines[k].strip()
            m = _ENTRY_RE.match(s)
            if m or _FUNC_RE.match(s):
                start = k
                while k < n and "{" not in self.lines[k]:
                    k += 1
                if k == n:
                    self.error("a function without a body ('{' expected)", start + 1, 1)
                body, depth = k, 0
                while k < n:
                    depth += self.lines[k].count("{") - self.lines[k].count("}")
                    if depth <= 0:
                        break
                    k += 1
                if k == n:
                    self.error("a function body without its closing '}'", body + 1, 1)
                if m:
                    self.entries.append(PtxEntry(m.group(1), demangle(m.group(1)), start + 1))
                    spans.append((start, body, k))
                self.skip.append((start, k))
            elif s.startswith(".section"):  # DWARF sections (.debug_str, ...): nothing to run
                start = k
                while k < n and "}" not in self.lines[k]:
                    k += 1
                self.skip.append((start, k))
            k += 1
        return spans

    def choose(self, entry: str | None) -> int:
        if not self.entries:
            raise AssemblyError("no kernel: the PTX has no .entry", file=self.file, line=1, col=1)
        names = ", ".join(e.name if e.name == e.mangled else f"{e.name} ({e.mangled})" for e in self.entries)
        if entry is None:
            if len(self.entries) > 1:
                raise AssemblyError(f"the PTX has {len(self.entries)} kernels ({names}); name one (entry: / "
                                    "kernel_name=)", file=self.file, line=self.entries[1].line, col=1)
            return 0
        want = entry.split("(")[0].strip()
        hits = [i for i, e in enumerate(self.entries) if entry in (e.mangled, e.name) or want == e.name]
        if len(hits) != 1:
            how = "several kernels are" if hits else "no kernel is"
            raise AssemblyError(f"{how} named '{entry}'; the PTX has {names}", file=self.file,
                                line=self.entries[hits[1] if hits else 0].line, col=1)
        return hits[0]

    # ---- pass 2: the chosen kernel as .sasm ---------------------------------------------------------
    def translate(self, span: tuple[int, int, int], entry: PtxEntry, local_threads: int | None = None) -> None:
        start, body, end = span
        lo = 0
        for a, b in sorted(self.skip) + [(len(self.lines), len(self.lines))]:  # module scope
            for line, col, s in self.statements(lo, a):
                self.module_statement(line, col, s)
            lo = max(lo, b + 1)
        self.header(start, body, entry)
        # the body: from after its `{` to before its closing `}`
        b0, b1 = self.lines[body], self.lines[end]
        cut = b1.rfind("}")
        self.lines[end] = b1[:cut] + " " * (len(b1) - cut)
        brace = b0.find("{")
        self.lines[body] = " " * (brace + 1) + self.lines[body][brace + 1:]
        m = _NTID_RE.search(" ".join(self.lines[start:body + 1]))
        if local_threads:
            self.local_threads = local_threads
        elif m:
            self.local_threads = math.prod(int(g) for g in m.groups() if g)
        for line, col, s in self.statements(body, end + 1):
            if s.startswith(".local"):
                self.local_array(line, col, s)
        self.shared_pointers(body, end)
        # labels no branch names (`$L__tmp3:`, `$L__func_end0:`: DWARF's markers, which may stand after the
        # last instruction) are left out
        targets = {m.group(1) for _l, _c, s in self.statements(body, end + 1)
                   for m in [re.search(rf"\bbra(?:\.uni)?\s+({_IDENT})", s)] if m}
        loc, ltid_declared, nounroll = None, False, False
        scopes: list[dict[str, str]] = []  # the registers each open nested scope declares: name -> unique name
        for line, col, s in self.statements(body, end + 1):
            # a nested scope (inline asm: `{ .reg .b32 %temp; mov.b64 {%r1, %temp}, %fd1; }`, `{ cvt... }`)
            while s[:1] in ("{", "}"):
                if s[0] == "{":
                    scopes.append({})
                elif scopes:
                    scopes.pop()
                rest = s[1:].lstrip()
                col += len(s) - len(rest)
                s = rest
            if not s:
                continue
            while True:  # labels
                m = re.match(rf"^({_IDENT})\s*:", s)
                if not m or s.startswith((".", "%")):
                    break
                if m.group(1) in targets:
                    self.emit(line, col, m.group(0))
                rest = s[m.end():]
                col += m.end() + len(rest) - len(rest.lstrip())
                s = rest.strip()
            if not s:
                continue
            if s.startswith("."):
                lm = _LOC_RE.match(s)
                if lm:
                    loc = self.location(lm, line, col)
                elif s.startswith(".pragma") and '"nounroll"' in s:
                    nounroll = True  # the loop whose first instruction comes next is not to be unrolled
                elif s.startswith(_IGNORED_DIRECTIVES) or s.startswith(".section"):
                    pass
                elif s.startswith((".reg ", ".shared ")):
                    self.declaration(line, col, self.scoped(s, scopes) if scopes and s.startswith(".reg") else s)
                elif s.startswith(".local"):  # laid out at the end (local_array); its frame index register here
                    if not ltid_declared:
                        self.emit(line, col, f".reg .u32 {_LTID}")
                        ltid_declared = True
                else:
                    head = s.split()[0]
                    if head == ".file":
                        continue
                    self.unsupported("directive", head, line, col)
                continue
            if scopes:
                self.instruction(line, col, self.renamed(s, scopes))
                self.original[line] = " ".join(s.split())  # the PTX as written
            else:
                self.instruction(line, col, s)
            if nounroll:
                self.nounroll.add(line)
                nounroll = False
            if loc is not None:
                self.loc_at[line] = loc
        # `.extern .shared` arrays follow the kernel's static ones (their size is the launch's)
        for name, align in self.dynamic:
            self.emit(end + 1, 1, f".shared .align {align} .b8 {name}[1]")
        for name, (align, _size, stride) in self.locals.items():
            self.emit(end + 1, 1, f".shared .align {align} .b8 {name}[{stride * self.local_threads}]")

    def scoped(self, s: str, scopes: list[dict[str, str]]) -> str:
        """A `.reg` of a nested scope, its names made unique (`%temp` -> `%temp$s3`, inline asm's `p` ->
        `%p$s4`): each scope's registers are its own in PTX (two `{ .reg .b32 %temp; ... }` blocks declare two
        registers, and an outer `%temp` is a third), and a gpusim program has one register namespace."""
        m = re.match(r"(\.reg\s+\.\w+\s+)(.*)$", s)
        if not m:
            return s
        self.scope_count += 1
        suffix = f"$s{self.scope_count}"
        out = []
        for tok in m.group(2).split(","):
            d = re.fullmatch(r"\s*(%?[A-Za-z_$][\w$]*)(?:<(\d{1,4})>)?\s*", tok)
            if not d:
                return s  # (the assembler reports it)
            name, count = d.groups()
            new = "%" + name.lstrip("%") + suffix
            if count is None:
                scopes[-1][name] = new
                out.append(new)
            else:  # `%r<4>` declares %r0..%r3
                scopes[-1].update({f"{name}{k}": f"{new}_{k}" for k in range(int(count))})
                out.append(f"{new}_<{count}>")
        return m.group(1) + ", ".join(out)

    @staticmethod
    def renamed(s: str, scopes: list[dict[str, str]]) -> str:
        """An instruction inside nested scopes with their registers' unique names."""
        names = {k: v for scope in scopes for k, v in scope.items()}
        if not names:
            return s
        pat = "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True))
        return re.sub(rf"(?<![\w$%.])(?:{pat})(?![\w$])", lambda m: names[m.group(0)], s)

    def local_array(self, line: int, col: int, s: str) -> None:
        """A `.local` array (nvcc's `__local_depotN`: a thread's stack frame of indexed arrays and spills).
        gpusim has no per-thread memory space yet, so the frames live in shared memory, one a thread at
        `stride` bytes apart (the array's size rounded up to its alignment, an odd multiple of it, so that a
        warp's accesses to one offset fall in as few banks as the alignment allows), laid out for the
        block's bound (.reqntid/.maxntid) or MAX_BLOCK_THREADS threads; `mov %SPL, depot` becomes that
        thread's frame address."""
        m = _LOCAL_DECL_RE.match(s)
        if not m:
            self.unsupported("declaration", s, line, col)
        align, typ, name, count = m.groups()
        if self.dynamic:
            self.error("a kernel with both .extern .shared and .local arrays is not supported", line, col)
        if typ not in TYPES or typ == "pred":
            self.unsupported("local array type", "." + typ, line, col)
        a = max(int(align or 1), TYPES[typ].bytes, 4)
        size = TYPES[typ].bytes * int(count or 1)
        stride = -(-size // a) * a
        if (stride // a) % 2 == 0:
            stride += a
        self.locals[name] = (a, size, stride)
        self.shared_names.add(name)

    def module_statement(self, line: int, col: int, s: str) -> None:
        head = s.split()[0] if s.split() else s
        if head in _HEADER:
            if head == ".address_size" and s.split()[1:] != ["64"]:
                self.error("only .address_size 64 is supported", line, col, s)
            if head == ".target":
                for t in re.split(r"[\s,]+", s)[1:]:
                    if t and not re.fullmatch(r"sm_\d+[a-z]?|texmode_\w+|debug|map_f64_to_f32", t):
                        self.error(f"unknown .target '{t}'", line, col)
            return
        if head in ("{", "}", ".file") or s.startswith(".section") or head.startswith("$L__info"):
            return
        s = _LINKAGE_RE.sub("", s)
        if s.startswith(".const"):
            self.const_variable(line, col, s)
            return
        gm = _GLOBAL_DECL_RE.match(s)
        if gm:  # Numba's `.common .global .u64 _ZN08NumbaEnv...`: a variable no kernel of ours reads
            self.globals.add(gm.group(1))
            return
        if s.startswith((".extern .shared", ".shared")):
            self.declaration(line, col, s)
            return
        if _ENTRY_RE.match(s) or _FUNC_RE.match(s) or s.startswith((".b8", ".b16", ".b32", ".b64")):
            return  # another function (not run), or DWARF data
        self.unsupported("directive", head, line, col)

    def const_variable(self, line: int, col: int, s: str) -> None:
        """A module-scope `.const` variable and its initial bytes (None without an initializer: host code
        would set it with cudaMemcpyToSymbol, which gpusim's launch does not offer)."""
        m = _CONST_DECL_RE.match(s)
        if not m or m.group(2) not in TYPES or m.group(2) == "pred":
            self.unsupported("declaration", s, line, col)
        _align, typ, name, count, init = m.groups()
        t = TYPES[typ]
        n = int(count) if count else 1
        if n * t.bytes > CONST_BANK_BYTES:
            self.error(f".const {name} is larger than the {CONST_BANK_BYTES}-byte constant bank", line, col)
        data = None
        if init is not None:
            vals = init.strip()
            if vals.startswith("{") != vals.endswith("}"):
                self.unsupported("initializer", vals[:20], line, col)
            items = [v.strip() for v in vals.strip("{}").split(",") if v.strip()]
            if len(items) > n:
                self.error(f".const {name} has {len(items)} initial values for {n} elements", line, col)
            arr = np.zeros(n, dtype=t.dtype)
            for k, v in enumerate(items):
                arr[k] = self.const_value(v, t, line, col)
            data = arr.tobytes()
        self.consts[name] = (typ, data)

    def const_value(self, tok: str, t, line: int, col: int):
        hexf = re.fullmatch(r"0[fF]([0-9a-fA-F]{8})|0[dD]([0-9a-fA-F]{16})", tok)
        try:
            if hexf:
                raw = bytes.fromhex(hexf.group(1) or hexf.group(2))
                return struct.unpack(">f" if hexf.group(1) else ">d", raw)[0]
            if t.is_float:
                return float(tok)
            v = int(tok, 0)
            return v & ((1 << t.bits) - 1) if v < 0 and t.kind != "s" else v
        except (ValueError, OverflowError):
            self.error(f"expected a .{t.name} initial value", line, col, tok)

    def const_load(self, line: int, col: int, guard: str, mnem: str, quals: list[str], ops: str) -> str | None:
        """`ld.const.T d, [NAME+off]` of an initialised `.const` variable -> `mov.T d, VALUE`: the constant
        bank at a fixed address holds a value known before the kernel runs, and gpusim charges a constant-
        bank read as it charges `ld.param` (the INT pipe: section 4). None when `ops` is not such a load."""
        m = re.fullmatch(rf"\s*(%[\w$]+)\s*,\s*\[\s*({_IDENT})\s*(?:\+\s*(-?\d+)\s*)?\]\s*", ops)
        typ = next((q for q in quals if q in TYPES), None)
        if not m or m.group(2) not in self.consts or typ is None or set(quals) & {"v2", "v4"}:
            return None
        ctype, data = self.consts[m.group(2)]
        if data is None:
            self.unsupported("read of a .const variable without an initializer", m.group(2), line, col)
        t = TYPES[typ]
        if t.bits < 16:
            return None
        off = int(m.group(3) or 0)
        if not 0 <= off <= len(data) - t.bytes:
            self.error(f"ld.const reads {t.bytes} bytes at offset {off} of the {len(data)}-byte .const "
                       f"{m.group(2)}", line, col)
        raw = data[off:off + t.bytes]
        if t.name in ("f32", "f64"):  # the exact bits, as PTX writes float immediates
            imm = ("0f" if t.bits == 32 else "0d") + raw[::-1].hex().upper()
        else:
            v = np.frombuffer(raw, dtype=t.dtype)[0]
            imm = repr(float(v)) if t.is_float else str(int(v))
        return f"{guard}{'mov.' + typ} {m.group(1)}, {imm}"

    def bit_field_extract(self, line: int, col: int, guard: str, mnem: str, quals: list[str], ops: str) -> str:
        """`bfe.u32/.s32/.u64/.s64 d, a, pos, len` with constant pos and len -> two gpusim instructions,
        as sm_70+ hardware has no bit-field-extract instruction either (ptxas emits a funnel shift and a
        LOP3 or SGXT): unsigned `shr` then `and` with the field's mask; signed `shl` the field to the top,
        then an arithmetic `shr` (sign-extending it from its top bit)."""
        t = TYPES.get(quals[0]) if len(quals) == 1 else None
        toks = [x.strip() for x in ops.split(",")]
        if t is None or t.bits not in (32, 64) or t.kind not in "us" or len(toks) != 4:
            self.unsupported("instruction", mnem, line, col)
        d, a, pos, ln = toks
        try:
            pos, ln = int(pos, 0) & 0xFF, int(ln, 0) & 0xFF  # PTX reads pos and len modulo 256
        except ValueError:
            self.unsupported("instruction", f"{mnem} with a register position or length", line, col)
        w, ln = t.bits, min(int(ln), t.bits)
        if ln == 0 or (pos >= w and t.kind == "u"):
            return f"{guard}mov.b{w} {d}, 0"
        if t.kind == "u":
            return f"{guard}shr.u{w} {d}, {a}, {pos}; {guard}and.b{w} {d}, {d}, {(1 << ln) - 1:#x}"
        if pos + ln >= w:  # the field reaches the top bit: an arithmetic shift alone
            return f"{guard}shr.s{w} {d}, {a}, {min(pos, w - 1)}"
        return f"{guard}shl.b{w} {d}, {a}, {w - pos - ln}; {guard}shr.s{w} {d}, {d}, {w - ln}"

    def shared_pointers(self, body: int, end: int) -> None:
        """Which registers hold shared-memory addresses: those computed (by moves, integer arithmetic and
        conversions) from a `.shared` variable's address or from `cvta(.to).shared`. A generic `ld`/`st`
        (Numba's, whose pointers are generic) through one of them is a shared access, any other a global
        one: the state space hardware would find from the generic address's window, found here from where
        the address came from. A pointer loaded from memory or passed as a parameter is global."""
        decl = re.compile(rf"\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+({_IDENT})")
        for code in self.lines:
            m = decl.search(code)
            if m:
                self.shared_names.add(m.group(1))
        flows = []  # (destination, sources) of each instruction that can carry an address
        for _line, _col, s in self.statements(body, end + 1):
            s = re.sub(rf"^(?:{_IDENT}\s*:\s*)+", "", s) if not s.startswith((".", "%", "@")) else s
            if s.startswith("@"):
                s = s.partition(" ")[2].lstrip()
            mnem, _, ops = s.partition(" ")
            parts = mnem.split(".")
            if parts[0] not in ("mov", "add", "sub", "mad", "cvt", "cvta", "selp", "and", "or"):
                continue
            toks = [t.strip() for t in ops.split(",")]
            if parts[0] == "cvta" and ("shared" in parts or "local" in parts):
                flows.append((toks[0], None))
            elif len(toks) > 1:
                flows.append((toks[0], toks[1:]))
        changed = True
        while changed:
            changed = False
            for dst, srcs in flows:
                if dst in self.shared_regs:
                    continue
                if srcs is None or any(t in self.shared_regs or t in self.shared_names for t in srcs):
                    self.shared_regs.add(dst)
                    changed = True

    def generic_space(self, ops: str) -> str:
        """The state space of a generic `ld`/`st`/`atom`/`red` (no `.global`/`.shared` written), from its
        address operand's provenance (shared_pointers)."""
        m = re.search(r"\[([^\]]*)\]", ops)
        base = re.split(r"[+\-\s]", m.group(1).strip())[0] if m else ""
        return "shared" if base in self.shared_regs or base in self.shared_names else "global"

    def header(self, start: int, body: int, entry: PtxEntry) -> None:
        """`.entry NAME ( .param ..., ... )` and performance directives -> `.kernel` and `.param` lines."""
        self.emit(start + 1, 1, f".kernel {entry.mangled}")
        for k in range(start, body + 1):
            text = self.lines[k]
            if k == start:
                text = text[text.find(entry.mangled) + len(entry.mangled):]
            text = text.split("{")[0]
            for piece in re.split(r"[(),]", text):
                s = piece.strip()
                if not s:
                    continue
                col = self.lines[k].find(s) + 1
                if s.startswith(".param"):
                    s2 = re.sub(r"\.ptr\s+|\.(?:global|shared|local|const)\s+|\.align\s+\d+\s+", "", s)
                    m = _PARAM_RE.match(s2)
                    if not m:
                        self.unsupported("parameter", s, k + 1, col)
                    self.emit(k + 1, col, f".param {m.group(1)} {m.group(2)}")
                elif s.startswith(".maxnreg"):
                    self.emit(k + 1, col, s)
                elif s.startswith(_IGNORED_DIRECTIVES) or re.fullmatch(r"\d+", s):
                    pass
                else:
                    self.unsupported("directive", s.split()[0], k + 1, col)

    def declaration(self, line: int, col: int, s: str) -> None:
        if s.startswith(".reg"):
            parts = s.split(None, 2)
            if len(parts) < 3 or parts[1] in (".f16x2", ".bf16", ".bf16x2", ".b128", ".f32x2"):
                self.unsupported("register type", parts[1] if len(parts) > 1 else s, line, col)
            self.emit(line, col, s)
            return
        m = _SHARED_DECL_RE.match(s)
        if not m:
            self.unsupported("declaration", s, line, col)
        align, typ, name, count = m.groups()
        if s.startswith(".extern"):
            if count:
                self.error("an .extern .shared array has no size (NAME[])", line, col, s)
            self.dynamic.append((name, int(align or 1)))
            return
        if not count:
            self.error("a .shared array needs a size (NAME[N]) unless it is .extern", line, col, s)
        self.emit(line, col, f".shared{' .align ' + align if align else ''} {typ} {name}[{count}]")

    def location(self, m: re.Match, line: int, col: int) -> tuple[str, int] | None:
        f, ln = int(m.group(1)), int(m.group(2))
        inl = _INLINED_RE.findall(m.group(4))
        if inl:  # code inlined from a header: the user's call site (the outermost one)
            f, ln = int(inl[-1][0]), int(inl[-1][1])
        if f not in self.files:
            self.error(f".loc names file {f}, which no .file declares", line, col)
        if ln == 0:
            return None
        return self.resolve(self.files[f]), ln

    def resolve(self, path: str) -> str:
        """A `.file` path as a path to the source: as written if it exists, else relative to the source
        folder (PTX compiled elsewhere and checked in), else as written."""
        if path not in self._resolved:
            p = Path(path)
            cands = [p] if p.is_absolute() else []
            if self.source_dir is not None:
                cands += [self.source_dir / p, self.source_dir / p.name] if not p.is_absolute() else [
                    self.source_dir / p.name]
            self._resolved[path] = next((str(c) for c in cands if c.is_file()), path)
        return self._resolved[path]

    def instruction(self, line: int, col: int, s: str) -> None:
        guard, rest = "", s
        if s.startswith("@"):
            g, _, rest = s.partition(" ")
            guard = g + " "
            rest = rest.lstrip()
        mnem, _, ops = rest.partition(" ")
        mcol = col + len(s) - len(rest)
        parts = mnem.split(".")
        op = parts[0]
        if op not in SUPPORTED:
            self.unsupported("instruction", mnem, line, mcol)
        for q in parts[1:]:
            if q in ("shared::cluster", "L2::cache_hint"):  # another block's shared memory; a policy operand
                self.unsupported("instruction", mnem, line, mcol)
        parts = [_SPACE_ALIASES.get(q, q) for q in parts]
        keep = _KEEP_SCOPE | _TENSOR_OPS
        quals = [q for q in parts[1:] if "::" not in q and (op in keep or q not in _DROP)]
        if op in ("rcp", "rsqrt") and parts[-1] == "f64" and "ftz" in parts:
            # rcp/rsqrt.approx.ftz.f64: PTX's 20-bit approximations, another instruction than rsqrt.approx.f64
            quals.insert(quals.index("f64"), "ftz")
        if op == "bfe":
            self.emit(line, col, self.bit_field_extract(line, mcol, guard, mnem, quals, ops))
            self.original[line] = " ".join(s.split())
            self.mnemonic[line] = mnem
            return
        if op == "ld" and "const" in quals:
            text = self.const_load(line, mcol, guard, mnem, quals, ops)
            if text is None:
                self.unsupported("constant-memory access", f"{mnem} {ops.strip()}", line, mcol)
            self.emit(line, col, text)
            self.original[line] = " ".join(s.split())
            self.mnemonic[line] = mnem
            return
        if op in _MEM_OPS and "local" in quals:
            if op in ("atom", "red") or any(n in ops for n in self.locals) or not self.locals:
                self.unsupported("local-memory access", f"{mnem} {ops.strip()}", line, mcol)
            quals = ["shared" if q == "local" else q for q in quals]
        if op == "mov" and self.locals:
            lm = re.fullmatch(rf"\s*(%[\w$]+)\s*,\s*({_IDENT})\s*", ops)
            if lm and lm.group(2) in self.locals:
                if parts[1:] not in (["u64"], ["b64"], ["s64"]):
                    self.unsupported("instruction", f"{mnem} of a .local array", line, mcol)
                # the thread's frame: depot + (tid.x + ntid.x * (tid.y + ntid.y * tid.z)) * stride
                stride = self.locals[lm.group(2)][2]
                self.emit(line, col, f"{guard}mad.lo.u32 {_LTID}, %tid.z, %ntid.y, %tid.y; "
                                     f"{guard}mad.lo.u32 {_LTID}, {_LTID}, %ntid.x, %tid.x; "
                                     f"{guard}mad.wide.u32 {lm.group(1)}, {_LTID}, {stride}, {lm.group(2)}")
                self.original[line] = " ".join(s.split())
                self.mnemonic[line] = mnem
                return
        for name in self.consts:
            if re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", ops):
                self.unsupported("use of a .const variable's address (constant memory indexed at run time)", name,
                                 line, mcol + len(mnem) + 1 + ops.index(name))
        if op in _MEM_OPS:
            if not set(quals) & _SPACE_QUALS:  # a generic address
                quals.insert(0, self.generic_space(ops))
            if not set(quals) & {"v2", "v4"}:  # `{ %r1 }` -> `%r1`, its column kept
                ops = _ONE_VEC_RE.sub(lambda v: v.group(1).ljust(len(v.group(0))), ops)
        for g in re.finditer(r"[A-Za-z_$][\w$]*", ops) if self.globals else ():
            if g.group(0) in self.globals:
                self.unsupported("use of a module-scope .global variable", g.group(0), line,
                                 mcol + len(mnem) + 1 + g.start())
        if "b32" in quals or "b64" in quals:  # a float's bits for an untyped value: `mov.b32 %r, 0f3F800000`
            ops = re.sub(r"(?<![\w$])0[fFdD]([0-9a-fA-F]{8}|[0-9a-fA-F]{16})(?![\w$])", r"0x\1", ops)
        if op == "cvta" and ("shared" in quals or ("local" in quals and self.locals)):
            # a shared address (and a local one: frames live in shared memory) as generic: the same number
            op, quals = "mov", [q for q in quals if q not in ("to", "shared", "local")]
        if "v8" in quals or ("{" in ops and op not in ("ld", "st", "mov", "mma", "ldmatrix")) or (
                "_" in re.findall(r"[{,]\s*(_)\s*[,}]", ops)):
            self.unsupported("instruction", mnem, line, mcol)
        if op == "cvta" and "global" not in quals:  # .local, .const
            self.unsupported("instruction", mnem, line, mcol)
        if op in ("bar", "barrier") and quals[:1] != ["sync"]:
            self.unsupported("instruction", mnem, line, mcol)
        if op in ("bar", "barrier") and "," in ops:
            self.unsupported("instruction", f"{mnem} with a thread count", line, mcol)
        if op == "ret":
            op = "exit"
        elif op == "barrier":
            op = "bar"
        new = ".".join([op, *quals])
        # keep the operands at their columns: pad the rewritten mnemonic to the original's length
        ops = ops.replace("+-", " -")  # nvcc writes [%rd1+-4]
        text = guard + new.ljust(len(mnem)) + (" " + ops if ops else "")
        self.emit(line, col, text)
        self.original[line] = " ".join(s.split())
        self.mnemonic[line] = mnem

    def emit(self, line: int, col: int, text: str) -> None:
        k = line - 1
        cur = self.out[k]
        if cur:  # a second statement on the line: after the first, separated by `;`
            self.out[k] = cur + "; " + text
            return
        self.out[k] = " " * (col - 1) + text


def ptx_entries(text: str, name: str = "<string>") -> list[PtxEntry]:
    """The kernels (`.entry`) of a PTX module, in file order."""
    r = _Reader(text, name, None)
    r.scan()
    return r.entries


_UNSUPPORTED_HINTS = ("unknown qualifier", "does not take", "unknown opcode", "takes no type", "needs one of")


def read_ptx(text: str, name: str = "<string>", entry: str | None = None, *,
             source_dir: str | Path | None = None, local_threads: int | None = None) -> Program:
    """Read PTX text (as nvcc -ptx writes it) into a Program: the kernel `entry` (mangled or demangled
    name; a module with one kernel needs none). `name` is the file name errors give; `source_dir`, where
    to find the CUDA sources that `.file` names (default: the folder of `name`); `local_threads`, the
    threads a block's `.local` frames are laid out for (default: the kernel's .reqntid/.maxntid bound, else
    MAX_BLOCK_THREADS; gpusim.launch passes its block's)."""
    sdir = Path(source_dir) if source_dir is not None else (Path(name).parent if name != "<string>" else None)
    r = _Reader(text, name, sdir)
    spans = r.scan()
    i = r.choose(entry)
    ent = r.entries[i]
    r.translate(spans[i], ent, local_threads)
    sasm = "\n".join(r.out)
    try:
        prog = assemble(sasm, name)
    except AssemblyError as exc:
        mnem = r.mnemonic.get(exc.line)
        if mnem is not None and exc.reason.startswith(_UNSUPPORTED_HINTS):
            raise AssemblyError(f"unsupported PTX instruction '{mnem}' ({exc.reason})", file=name, line=exc.line,
                                col=exc.col) from None
        raise
    instrs = tuple(replace(ins, text=r.original.get(ins.line, ins.text), loc=r.loc_at.get(ins.line))
                   for ins in prog.instructions)
    dynamic = {name for name, _ in r.dynamic}
    shared = tuple(replace(v, count=0, dynamic=True) if v.name in dynamic else v for v in prog.shared)
    return replace(prog, name=ent.name, instructions=instrs, shared=shared, nounroll=frozenset(r.nounroll))


def read_ptx_file(path: str | Path, entry: str | None = None, *, source_dir: str | Path | None = None,
                  local_threads: int | None = None) -> Program:
    """Read a .ptx file (see read_ptx)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise AssemblyError(f"cannot read PTX: {exc.strerror}", file=str(path), line=0, col=0) from None
    except UnicodeDecodeError as exc:
        raise AssemblyError(f"not UTF-8 text: byte at offset {exc.start}", file=str(path), line=0, col=0) from None
    return read_ptx(text, str(path), entry, source_dir=source_dir, local_threads=local_threads)


def with_dynamic_shared(program: Program, nbytes: int) -> Program:
    """The program with its `.extern .shared` array sized `nbytes` (the launch's dynamic shared
    memory, `<<<grid, block, nbytes>>>`)."""
    if nbytes and not any(v.dynamic for v in program.shared):
        from gpusim.errors import LaunchError

        raise LaunchError(f"{nbytes} bytes of dynamic shared memory for a kernel without an .extern .shared "
                          "array", field="shared_bytes")
    return replace(program, shared=tuple(replace(v, count=int(nbytes)) if v.dynamic else v
                                         for v in program.shared))

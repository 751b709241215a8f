"""Which operands of a SASS instruction are destinations, and how many 32-bit registers each operand spans:
the one place that knows each opcode's operand order (the functional decoder and the program's register
read/write sets both use it)."""

from __future__ import annotations

NO_DST = frozenset({"STG", "STS", "STL", "ST", "RED", "REDG", "BRA", "EXIT", "BAR", "BSSY", "BSYNC", "WARPSYNC",
                    "NOP", "YIELD", "DEPBAR", "LDGDEPBAR", "LDGSTS", "MEMBAR", "ERRBAR", "CCTL", "CALL", "RET",
                    "NANOSLEEP", "R2P"})
PRED_PAIR = frozenset({"ISETP", "FSETP", "DSETP", "PLOP3", "UISETP", "UPLOP3"})
TWO_DST = frozenset({"SHFL", "VOTE", "VOTEU"})


def n_sources(opcode: str, mods: tuple[str, ...], nops: int) -> int:
    """How many trailing operands are sources (the leading rest are destinations)."""
    m = set(mods)
    if opcode in NO_DST:
        return nops
    if opcode in PRED_PAIR:
        return nops - 2
    if opcode in TWO_DST:
        return nops - 2
    if opcode in ("IADD3", "UIADD3"):
        return 3 + (2 if "X" in m else 0)
    if opcode in ("LEA", "ULEA"):
        return 3 + ("HI" in m and "SX32" not in m) + ("X" in m)
    if opcode in ("LOP3", "ULOP3"):
        return 5
    if opcode in ("ATOMG", "ATOM", "ATOMS") and "CAS" in m and nops == 5:
        return 3
    return nops - 1


def dst_width(opcode: str, mods: tuple[str, ...]) -> int:
    """32-bit registers the (first register) destination spans."""
    m = set(mods)
    if opcode in ("IMAD", "UIMAD") and "WIDE" in m:
        return 2
    if opcode in ("DADD", "DMUL", "DFMA", "CS2R") or (opcode in ("ULDC", "LDC") and "64" in m):
        return 2 if not (opcode == "CS2R" and "32" in m) else 1
    if opcode in ("F2F", "I2F") and "F64" in m and mods and mods[0] == "F64":
        return 2
    if opcode in ("LDG", "LDS", "LDL", "LD", "ATOMG", "ATOMS", "ATOM"):
        return 4 if "128" in m else 2 if "64" in m else 1
    if opcode == "LDSM":
        return 4 if "4" in m else 2 if "2" in m else 1
    if opcode == "HMMA":
        return 4 if "F32" in m else 2
    if opcode == "IMMA":
        return 4
    return 1

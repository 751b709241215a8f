"""The control codes of a Volta-and-later SASS instruction: the top 23 bits of its 128-bit encoding (bits
105..127, i.e. bits 41..63 of the second 64-bit word as cuobjdump and nvdisasm -hex print it).

Layout, low bit first (facts from the public CuAssembler and maxas notes, checked against ptxas's output):
  stall  4 bits  cycles the warp waits before its next instruction may issue (fixed-latency results)
  yield  1 bit   0: the scheduler should switch to another warp after this one (printed `Y`), 1: need not
  wbar   3 bits  dependency barrier (SB0..SB5) set until this instruction's result is written; 7: none
  rbar   3 bits  dependency barrier set until this instruction's sources have been read; 7: none
  wait   6 bits  barriers this instruction waits for (bit k: SBk)
  reuse  4 bits  operand reuse cache flags, one per source slot"""

from __future__ import annotations

from dataclasses import dataclass

NO_BARRIER = 7
BARRIERS = 6


@dataclass(frozen=True, slots=True)
class Control:
    stall: int = 1
    yield_: bool = False  # the scheduler should switch warps after it
    wbar: int = -1  # SBk set until the result is written; -1: none
    rbar: int = -1  # SBk set until the sources are read; -1: none
    wait: int = 0  # bit k: waits for SBk
    reuse: int = 0

    @classmethod
    def from_bits(cls, code: int) -> Control:
        """Decode the 23-bit control field (the high 64-bit word shifted right by 41)."""
        wbar, rbar = (code >> 5) & 7, (code >> 8) & 7
        return cls(stall=code & 0xF, yield_=not (code >> 4) & 1, wbar=-1 if wbar == NO_BARRIER else wbar,
                   rbar=-1 if rbar == NO_BARRIER else rbar, wait=(code >> 11) & 0x3F, reuse=(code >> 17) & 0xF)

    @classmethod
    def from_high_word(cls, high: int) -> Control:
        return cls.from_bits((high >> 41) & 0x7FFFFF)

    @property
    def waits(self) -> tuple[int, ...]:
        return tuple(k for k in range(BARRIERS) if self.wait >> k & 1)

    def __str__(self) -> str:
        """CuAssembler's notation: `[B0-----:R-:W2:Y:S04]`."""
        w = "".join(str(k) if self.wait >> k & 1 else "-" for k in range(BARRIERS))
        return (f"[B{w}:R{'-' if self.rbar < 0 else self.rbar}:W{'-' if self.wbar < 0 else self.wbar}:"
                f"{'Y' if self.yield_ else '-'}:S{self.stall:02d}]")

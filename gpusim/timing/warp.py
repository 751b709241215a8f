"""A resident warp: its instruction stream, where it stands in it, and its scoreboard."""

from __future__ import annotations

from gpusim.timing.decode import TimingInfo

INF = float("inf")


class Scoreboard:
    """Per register: the cycle its pending write lands and why the warp would wait for it (a
    fixed-latency result: `wait`; an MIO result: `short_scoreboard`; an L1TEX result: `long_scoreboard`).
    An instruction may issue once every register of its `deps` (sources: RAW; destinations: WAW) is
    ready; the SM reads the lists directly on its issue path."""

    __slots__ = ("ready", "reason")

    def __init__(self, nregs: int):
        self.ready = [0] * nregs
        self.reason = [0] * nregs

    def write(self, regs: tuple[int, ...], at: int, reason: int) -> None:
        ready, why = self.ready, self.reason
        for r in regs:
            ready[r] = at
            why[r] = reason


class Warp:
    """A resident warp. `code[pos]` is its next instruction (its TimingInfo); `code` holds only the
    window of its stream pulled from the functional executor so far (`base`: the stream position of
    `code[0]`), `mem` the plans of its memory accesses by stream position; `complete`: nothing more
    will be pulled."""

    __slots__ = ("block", "index", "code", "n", "pos", "base", "mem", "complete", "feed", "info", "ready",
                 "port", "mark", "sp", "scoreboard", "drain", "start", "age", "entry", "snap", "queued", "slot")

    def __init__(self, block, index: int, nregs: int, start: int, age: int):
        self.block = block  # the ResidentBlock it belongs to
        self.index = index  # warp index within the block
        self.code = None  # list of TimingInfo, set by the feed
        self.n = 0
        self.pos = 0
        self.base = 0
        self.mem: dict = {}
        self.complete = False
        self.feed = None
        self.info: TimingInfo | None = None
        self.ready = start  # earliest cycle the next instruction may issue (INF: at a barrier)
        self.port = 0
        self.mark = start  # the cycle after it arrived at a barrier
        self.sp = None
        self.scoreboard = Scoreboard(nregs)
        self.drain = start  # when the warp's last store is acknowledged
        self.start = start
        self.age = age
        self.entry = (age, self)  # how its sub-partition's ready lists hold it, ordered by age
        self.snap = 0  # its unit's free-cycle count when the warp became ready
        self.queued = False  # in its sub-partition's ready lists
        self.slot = 0  # its index in the feed's batch

    def extend(self, code: list) -> None:
        """Append newly executed instructions, dropping the ones already issued."""
        if self.pos:
            del self.code[:self.pos]
            self.base += self.pos
            self.pos = 0
        self.code += code
        self.n = len(self.code)

    def has_next(self) -> bool:
        """Whether another instruction follows, pulling more of the stream if need be."""
        while self.pos >= self.n:
            if self.complete or not self.feed.pull():
                return False
        return True

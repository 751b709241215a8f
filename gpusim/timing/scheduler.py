"""Warp schedulers: which eligible warp a sub-partition issues from this cycle.

- `lrr` (loose round robin): the first eligible warp after the one issued last, in slot order.
- `gto` (greedy then oldest): keep issuing from the same warp while it is eligible, else the oldest.
- `two_level`: only the first `active_warps_two_level` warps of a priority list may issue (round
  robin among them); a warp that issues a long-latency (global memory) instruction or waits at a
  barrier drops to the end of the list, and the next warp moves into the active set."""

from __future__ import annotations


class WarpScheduler:
    """Chooses among the ready warps of the units that are free this cycle (`by_port[p]` for p in
    `open_ports`: each list holds the warps' (age, warp) entries, oldest first); `warps` is the
    sub-partition's priority list."""

    def __init__(self, policy: str, active_set: int):
        self.policy = policy
        self.active_set = active_set
        self.last = None
        self.choose = {"gto": self._gto, "lrr": self._lrr, "two_level": self._two_level}[policy]

    def _oldest(self, by_port, open_ports):
        if len(open_ports) == 1:
            return by_port[open_ports[0]][0][1]
        return min([by_port[p][0] for p in open_ports])[1]

    def _gto(self, by_port, open_ports, warps):
        last = self.last
        if last is not None and last.queued and last.port in open_ports:
            return last
        w = self.last = self._oldest(by_port, open_ports)
        return w

    def _lrr(self, by_port, open_ports, warps):
        last = self.last
        w = None
        if last is not None:
            after = last.age
            for p in open_ports:
                for age, e in by_port[p]:
                    if age > after:
                        if w is None or age < w.age:
                            w = e
                        break
        if w is None:
            w = self._oldest(by_port, open_ports)
        self.last = w
        return w

    def _two_level(self, by_port, open_ports, warps):
        active = warps[:self.active_set]
        cands = sorted(e for p in open_ports for e in by_port[p] if e[1] in active)
        if not cands:
            return None
        w = cands[0][1]
        last = self.last
        if last is not None:
            for age, e in cands:
                if age > last.age:
                    w = e
                    break
        self.last = w
        return w

    def demote(self, warp, warps: list) -> None:
        """two_level: a warp that issued a long-latency instruction, or waits at a barrier, leaves the
        active set."""
        if self.policy == "two_level":
            warps.remove(warp)
            warps.append(warp)


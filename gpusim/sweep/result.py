"""`SweepResult`: a sweep as one tidy table (a row per point, the same columns in every row) with its views:
CSV, JSON, a terminal table, and the best point with the evidence for it (docs/sweep.md)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any

from gpusim.stats.peaks import kernel_warnings
from gpusim.stats.ranking import ENERGY, ranked_by
from gpusim.sweep.points import Point

HEAD = ("point", "workload", "config", "config_hash", "config_file", "label")  # then the parameters, overrides
RUN = ("warp_scheduler", "seed", "status", "error", "verified", "cached", "wall_seconds")  # then the metrics
TAIL = ("verdict", "verdict_reason", "warnings")
OVERRIDE = "override."  # prefix of the override columns
# Points within this many percent of the best point's cycles are ties: the timing model is validated to
# about 15 % against hardware (docs/validation.md), so a 0.3 % difference names no winner.
TIE_PCT = 1.0


def make_row(point: Point, *, workload: str, config: str, config_hash: str | None, label: str,
             warp_scheduler: str | None, seed: int, outcome: dict[str, Any], cached: bool,
             verify: bool, config_file: str | None = None) -> dict[str, Any]:
    """A point's row from its outcome (`worker.run_task`'s). With `verify`, a result that differs from
    the reference is an error row (its metrics kept); a point that could not run has no metrics.
    `config_file`: where the config was read (so a chart finds a user's config from any folder)."""
    row: dict[str, Any] = {"point": point.index, "workload": workload, "config": config, "config_hash": config_hash,
                           "config_file": config_file, "label": label, **point.params,
                           **{OVERRIDE + k: v for k, v in point.overrides.items()},
                           "warp_scheduler": warp_scheduler, "seed": seed}
    if "error" in outcome:
        return {**row, "status": "error", "error": outcome["error"], "verified": None, "cached": cached,
                "wall_seconds": None}
    bad = verify and outcome["verified"] is False
    return {**row, "status": "error" if bad else "ok", "error": outcome["mismatch"] if bad else None,
            "verified": outcome["verified"], "cached": cached, "wall_seconds": outcome["wall_seconds"],
            **outcome["metrics"], "verdict": outcome["verdict"], "verdict_reason": outcome["verdict_reason"],
            "warnings": "; ".join(map(str, kernel_warnings(outcome["metrics"]))) or None}


@dataclass
class SweepResult:
    """`rows` (dicts with the keys `columns`, in point order), the workload's default parameters, `axes`
    (the columns whose values differ between points), `provenance` (gpusim and code version, seed,
    verify), `problem` (the axes that change the problem's size, `Workload.problem`: points compare only
    with points of the same size) and `tie_pct` (differences below it are ties)."""

    workload: str
    defaults: dict[str, int | float]
    columns: list[str]
    rows: list[dict[str, Any]]
    axes: list[str]
    provenance: dict[str, Any]
    problem: list[str] = field(default_factory=list)
    tie_pct: float = TIE_PCT
    metric: str = "time"  # what "best" means: least time, or least energy (energy_j)

    @classmethod
    def build(cls, workload: str, defaults: dict[str, int | float], overrides: list[str],
              rows: list[dict[str, Any]], provenance: dict[str, Any], problem: tuple[str, ...] | list[str] = (),
              tie_pct: float = TIE_PCT, metric: str = "time") -> SweepResult:
        """Order the rows, fix the columns (every row gets each, None where it has no value) and find the
        axes (and which of them are problem sizes)."""
        front = [*HEAD, *defaults, *(OVERRIDE + k for k in overrides), *RUN]
        metrics: dict[str, None] = {}
        for r in rows:
            metrics.update((k, None) for k in r if k not in front and k not in TAIL)
        columns = [*front, *metrics, *TAIL]
        rows = [{c: r.get(c) for c in columns} for r in sorted(rows, key=lambda r: r["point"])]
        candidates = ["config", *defaults, *(OVERRIDE + k for k in overrides), "warp_scheduler"]
        axes = [c for c in candidates if len({repr(r[c]) for r in rows}) > 1]
        return cls(workload, dict(defaults), columns, rows, axes, dict(provenance),
                   [a for a in problem if a in axes], float(tie_pct), metric)

    # -- choosing --
    def sizes(self) -> list[dict[str, Any]]:
        """The problem sizes among the points that ran (values of the `problem` axes), in point order;
        one empty size when no problem axis varies."""
        seen = {repr(k): k for k in ({a: r[a] for a in self.problem} for r in self.ok_rows())}
        return list(seen.values()) or [{}]

    def size_of(self, row: dict[str, Any]) -> dict[str, Any]:
        return {a: row[a] for a in self.problem}

    def ok_rows(self, label: str | None = None, size: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The points that ran (and verified, unless the sweep ran without verification), of one label
        and one problem size if given; ranked by energy, only those with an energy (a power model)."""
        return [r for r in self.rows if r["status"] == "ok" and label in (None, r["label"])
                and all(r[a] == v for a, v in (size or {}).items())
                and (self.metric != "energy" or r.get(ENERGY) is not None)]

    def ranked_by(self, label: str | None = None, size: dict[str, Any] | None = None) -> str:
        """What the points (of one label and size, if given) are ranked by: "cycles" where they all ran at
        one clock, else "kernel_seconds" (a design with a faster clock may take more cycles and less
        time), or "energy_j" where the sweep ranks by energy (`metric`). The one definition of "best" that
        `best`, `worst`, `ties`, the JSON and the charts use."""
        return ranked_by(self.ok_rows(label, size), self.metric)

    def best(self, label: str | None = None, size: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The fastest row (`ranked_by`: fewest cycles at one clock, else least time; the first such
        point on a tie), of one label and problem size if given. Across problem sizes this is the
        smallest problem, not a better launch: see `sizes()`."""
        by = self.ranked_by(label, size)
        return min(self.ok_rows(label, size), key=lambda r: (r[by], r["point"]), default=None)

    def worst(self, label: str | None = None, size: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The slowest row (the first such point on a tie), of one label and size if given."""
        by = self.ranked_by(label, size)
        return min(self.ok_rows(label, size), key=lambda r: (-r[by], r["point"]), default=None)

    def ties(self, label: str | None = None, size: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The other rows within `tie_pct` of the best's cycles or time (same label and size filter),
        fastest first."""
        best, by = self.best(label, size), self.ranked_by(label, size)
        if best is None:
            return []
        limit = best[by] * (1 + self.tie_pct / 100)
        return sorted((r for r in self.ok_rows(label, size) if r is not best and r[by] <= limit),
                      key=lambda r: (r[by], r["point"]))

    def default(self, like: dict[str, Any]) -> dict[str, Any] | None:
        """The row with `like`'s label and problem size whose other swept workload parameters are the
        workload's defaults, if any."""
        swept = [a for a in self.axes if a in self.defaults and a not in self.problem]
        if not swept:
            return None
        return next((r for r in self.ok_rows(like["label"], self.size_of(like))
                     if all(r[a] == self.defaults[a] for a in swept)), None)

    def describe(self, row: dict[str, Any], axes: list[str] | None = None) -> str:
        """A point in a few words: its values on the axes (`block=256`, `a100 block=256 sm_count=54`), or on
        the given ones; its label when there are none."""
        parts = []
        for a in self.axes if axes is None else axes:
            if a in ("config", "warp_scheduler"):
                parts.append(str(row[a]))
            else:
                parts.append(f"{a.rpartition('.')[2]}={row[a]}")
        return " ".join(parts) or row["label"]

    # -- files --
    def to_csv(self) -> str:
        """One line per point, the columns in order; an empty cell where a row has no value."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows([["" if r[c] is None else r[c] for c in self.columns] for r in self.rows])
        return buf.getvalue()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: `kind` "sweep", the workload, provenance, `columns`, `ranked_by` ("cycles", or
        "kernel_seconds" where the clocks differ), `best` (its point index; None
        when the points solve problems of several sizes), `best_by_size` (per problem size: the size, the
        best point and the points tied with it within `tie_pct`), `problem`, `tie_pct` and `points` (the
        rows): `pd.DataFrame(d["points"], columns=d["columns"])`."""
        sizes = self.sizes()
        by_size = []
        for size in sizes:
            b = self.best(size=size)
            if b is not None:
                by_size.append({"size": size, "best": b["point"], "ties": [r["point"] for r in self.ties(size=size)]})
        best = by_size[0]["best"] if len(by_size) == 1 else None
        return {"kind": "sweep", "workload": self.workload, **self.provenance, "columns": self.columns,
                "problem": self.problem, "tie_pct": self.tie_pct, "metric": self.metric, "ranked_by": self.ranked_by(),
                "best": best,
                "best_by_size": by_size, "points": self.rows}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"

    # -- the terminal --
    def warned(self) -> list[str]:
        """One line per point with a figure above the config's peak: `point N (its axes): why`."""
        return [f"point {r['point']} ({self.describe(r)}): {r['warnings']}" for r in self.rows if r.get("warnings")]

    def table(self) -> str:
        """One line per point: its axes, status, cycles, kernel time, achieved occupancy, verdict and top
        stall (or the error)."""
        axes = self.axes or ["label"]
        energy = self.metric == "energy"  # the energy and average power beside the time
        header = ["#", *(a.rpartition(".")[2] for a in axes), "status", "cycles", "time us",
                  *(("energy uJ", "W") if energy else ()), "achieved occ.", "verdict", "top stall"]
        right = [True, *(isinstance(self.rows[0][a], int | float) for a in axes), False, True, True,
                 *((True, True) if energy else ()), True, False, False]
        lines: list[tuple[list[str], str | None]] = []  # the cells, and the error of a failed point
        for r in self.rows:
            cells = [str(r["point"]), *(str(r[a]) for a in axes), r["status"]]
            if r["status"] == "ok":
                stall, share = _top_stall(r)
                cells += [f"{r['cycles']:,}", f"{r['kernel_seconds'] * 1e6:.3f}"]
                if energy:
                    cells += ([f"{r['energy_j'] * 1e6:.3f}", f"{r['average_power_w']:.1f}"]
                              if r.get("energy_j") is not None else ["-", "-"])
                cells += [f"{r['achieved_occupancy']:.1%}", r["verdict"], f"{stall} {share:.1f}%"]
            lines.append((cells, None if r["status"] == "ok" else r["error"].splitlines()[0]))
        every = [header, *(cells for cells, _ in lines)]
        widths = [max(len(cells[i]) for cells in every if i < len(cells)) for i in range(len(header))]

        def fmt(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if rt else c.ljust(w)
                             for c, w, rt in zip(cells, widths, right, strict=False)).rstrip()

        out = [fmt(header)] + [fmt(cells) if error is None else f"{fmt(cells)}  {error}" for cells, error in lines]
        return "\n".join(out)

    def explain(self) -> str:
        """The best point of each problem size and why: how much it beats the worst and the workload's
        default launch of that size, the points tied with it, and the evidence (occupancy, bottleneck
        verdict, dominant stall) beside the worst's."""
        if self.best() is None:
            return "best: none; no point ran (see the error column)"
        sizes = self.sizes()
        lines: list[tuple[str, str]] = []
        if len(sizes) > 1:
            lines.append(("sizes", f"{len(sizes)} problem sizes ({', '.join(self.problem)}): each point is compared "
                                   "only with points of its own size"))
        for size in sizes:
            lines += self._explain_size(size, len(sizes) > 1)
        width = max(len(a) for a, _ in lines)
        return "\n".join(f"{a:<{width}}  {b}" for a, b in lines)

    def _explain_size(self, size: dict[str, Any], several: bool) -> list[tuple[str, str]]:
        best, worst = self.best(size=size), self.worst(size=size)
        by = self.ranked_by(size=size)
        at = " at " + " ".join(f"{a}={v}" for a, v in size.items()) if several else ""
        launch = [a for a in self.axes if a not in self.problem]
        ran = len(self.ok_rows(size=size))
        if by == "cycles":
            which = f"the fewest of the {ran} points that ran" if ran > 1 else "the only point that ran"
            lines = [(f"best{at}", f"{self.describe(best, launch)}: {best['cycles']:,} cycles "
                                   f"({best['kernel_seconds'] * 1e6:.3f} us), {which}")]
        elif by == ENERGY:
            which = f"the least of the {ran} points with an energy" if ran > 1 else "the only point with an energy"
            lines = [(f"best{at}", f"{self.describe(best, launch)}: {_amount(best, by)} ({_per_watt(best)}; "
                                   f"{best['kernel_seconds'] * 1e6:.3f} us), {which}"),
                     ("ranked by", "energy (--metric energy): the power model's energy_j")]
        else:
            which = f"the fastest of the {ran} points that ran" if ran > 1 else "the only point that ran"
            clocks = sorted({r["clock_mhz"] for r in self.ok_rows(size=size)})
            lines = [(f"best{at}", f"{self.describe(best, launch)}: {best['kernel_seconds'] * 1e6:.3f} us "
                                   f"({best['cycles']:,} cycles at {best['clock_mhz']:g} MHz), {which}"),
                     ("ranked by", f"time, not cycles: the clocks differ ({', '.join(f'{c:g}' for c in clocks)} "
                                   "MHz)")]
        ties = self.ties(size=size)
        if ties:
            shown = ", ".join(f"{self.describe(r, launch)} ({_amount(r, by, unit=False)})" for r in ties[:6])
            more = f" and {len(ties) - 6} more" if len(ties) > 6 else ""
            lines.append(("ties", f"{shown}{more}: within {self.tie_pct:g}% of the best, which the model does "
                                  "not tell apart"))
        if worst is not best:
            lines.append(("vs worst", _beats(best, worst, self.describe(worst, launch), self.tie_pct, by)))
        default = self.default(best)
        if default is best:
            lines.append(("vs default", "it is the workload's default launch"))
        elif default is not None:
            lines.append(("vs default", _beats(best, default, f"the default, {self.describe(default, launch)}",
                                               self.tie_pct, by)))

        def theirs(mine: str, text: str) -> str:
            """The worst point's figure beside the best's."""
            if worst is best:
                return ""
            return " (worst: the same)" if text == mine else f" (worst: {text})"

        lines.append(("occupancy", _occupancy(best) + theirs(_occupancy(best), _occupancy(worst))))
        lines.append(("bottleneck", f"{best['verdict']}: {best['verdict_reason']}"
                                    + theirs(best["verdict"], worst["verdict"])))
        stall, share = _top_stall(best)
        w_stall, w_share = _top_stall(worst)
        lines.append(("top stall", f"{stall} {share:.1f}% of warp-cycles" + theirs(stall, f"{w_stall} {w_share:.1f}%")))
        labels = list(dict.fromkeys(r["label"] for r in self.ok_rows(size=size)))
        if len(labels) > 1 and len(labels) < ran:  # (a label of one point is its own best: nothing to say)
            params = [a for a in self.axes if a in self.defaults and a not in self.problem]
            for label in labels:
                b = self.best(label, size)
                lines.append((f"best on {label}", f"{self.describe(b, params)}: "
                                                  f"{_amount(b, self.ranked_by(label, size))}"))
        return lines


def _amount(row: dict[str, Any], by: str, unit: bool = True) -> str:
    """A point's cycles, its time where points are ranked by time, its energy where by energy."""
    if by == "cycles":
        return f"{row['cycles']:,}" + (" cycles" if unit else "")
    if by == ENERGY:
        return f"{row[ENERGY] * 1e6:.3f} uJ"
    return f"{row['kernel_seconds'] * 1e6:.3f} us"


def _per_watt(row: dict[str, Any]) -> str:
    """A point's average power and, where it has flops, its performance per watt."""
    text = f"{row['average_power_w']:.1f} W"
    return text + (f", {row['gflops_per_watt']:.2f} GFLOP/s per W" if row.get("gflops_per_watt") else "")


def _beats(best: dict[str, Any], other: dict[str, Any], what: str, tie_pct: float = TIE_PCT,
           by: str = "cycles") -> str:
    if by == ENERGY:
        mine, theirs = best[by] * 1e6, other[by] * 1e6
        saved = theirs - mine
        if saved <= mine * tie_pct / 100:
            return f"ties with {what} ({theirs:.3f} uJ, within {tie_pct:g}%)"
        return f"{saved:.3f} uJ less ({100 * saved / theirs:.1f}%) than {what} ({theirs:.3f} uJ)"
    if by != "cycles":
        mine, theirs = best[by] * 1e6, other[by] * 1e6
        saved = theirs - mine
        if saved <= mine * tie_pct / 100:
            return f"ties with {what} ({theirs:.3f} us, within {tie_pct:g}%)"
        return (f"{saved:.3f} us less ({100 * saved / theirs:.1f}%, {theirs / mine:.2f}x faster) than {what} "
                f"({theirs:.3f} us)")
    saved, theirs = other["cycles"] - best["cycles"], other["cycles"]
    if not saved:
        return f"ties with {what} ({theirs:,} cycles)"
    if saved <= best["cycles"] * tie_pct / 100:
        return f"ties with {what} ({theirs:,} cycles, {saved:,} more: within {tie_pct:g}%)"
    return (f"{saved:,} fewer cycle{'s' if saved != 1 else ''} ({100 * saved / theirs:.1f}%, "
            f"{theirs / best['cycles']:.2f}x faster) than {what} ({theirs:,} cycles)")


def _occupancy(row: dict[str, Any]) -> str:
    theo = row.get("theoretical_occupancy")
    return f"{row['achieved_occupancy']:.1%} achieved" + (f" of {theo:.1%} theoretical" if theo is not None else "")


def _top_stall(row: dict[str, Any]) -> tuple[str, float]:
    """The warp state, other than issuing (`selected`), that holds the most warp-cycles."""
    prefix = "warp_states_pct."
    stalls = {k[len(prefix):]: v for k, v in row.items()
              if k.startswith(prefix) and k != prefix + "selected" and v is not None}
    if not stalls:
        return "none", 0.0
    name = max(stalls, key=lambda k: stalls[k])
    return name, stalls[name]


__all__ = ["HEAD", "OVERRIDE", "RUN", "SweepResult", "TAIL", "make_row"]

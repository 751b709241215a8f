"""docs/sampling.md's table from stored records, by `gpusim bench --sampling`'s own functions (`compare`,
`summary`, `markdown`): the full runs of a `--references` file and the sampled runs of JSON-lines files of
`bench_sampling.measure_sampled` records (a later record of a row replaces an earlier one), in the h200
suite's order. A row with no stored sampled run is "not run". Writes the Markdown table and the rows'
JSON (`bench --sampling --json`'s `results` and `summary`).

    python benchmarks/sampling/assemble.py --references benchmarks/sampling/h200_full.jsonl \\
        --sampled benchmarks/sampling/h200_sampled.jsonl --markdown t.md --json benchmarks/sampling/h200_rows.json

`--rekey` first rewrites every reference's key for the current model and config (`reference_key`): for
model changes that leave these workloads' cycles alone, checked by re-simulating some of them."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from pathlib import Path

from gpusim.cli import bench_sampling as bs

NOT_RUN = {"decision": "not run", "reason": "not run here: see the notes below the table"}


def _row_key(name: str, params: dict) -> str:
    return json.dumps([name, dict(sorted(params.items()))])


def rekey(path: Path) -> int:
    """Rewrite each record's key and model for the current model code and config; returns the count."""
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in recs:
        r["key"] = bs.reference_key(r["workload"], r["params"], r.get("config", "h200"))
        r["model"] = bs.model_version()
    path.write_text("".join(json.dumps(r, default=bs._plain) + "\n" for r in recs))
    return len(recs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--references", required=True)
    ap.add_argument("--sampled", action="append", required=True)
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    ap.add_argument("--rekey", action="store_true")
    a = ap.parse_args()
    if a.rekey:
        print(f"re-keyed {rekey(Path(a.references))} references to model {bs.model_version()}")
    refs = bs.read_references(a.references)
    sampled: dict[str, dict] = {}
    for f in a.sampled:
        for line in Path(f).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                sampled[_row_key(r["workload"], r.get("suite_params", r["params"]))] = r
    rows = []
    for name, params in bs.h200_suite():
        full = bs.full_reference(name, params, "h200", refs, None, None, None, stored_only=True)
        rows.append(bs.compare(full, sampled.get(_row_key(name, params), NOT_RUN)))
        print(bs.table_line(rows[-1]))
    s = bs.summary(rows)
    print(bs.summary_line(s))
    doc = {"suite": "h200", "config": "h200", "cpu_count": os.cpu_count(),
           "started": dt.date.today().isoformat()}
    if a.markdown:
        Path(a.markdown).write_text(bs.markdown(rows, s, doc))
    if a.json:
        Path(a.json).write_text(json.dumps({"suite": "h200", "config": "h200", "results": rows, "summary": s},
                                           indent=1, default=bs._plain) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

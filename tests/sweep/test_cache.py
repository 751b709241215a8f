"""The result cache: what its key depends on, entries validated on load, reruns and resumed sweeps that
simulate nothing twice."""

import json
import re
import shutil
from pathlib import Path

import pytest

import gpusim
from gpusim.sweep import LocalExecutor, ResultCache, sweep
from gpusim.sweep import cache as cache_mod
from gpusim.sweep.cache import CacheWarning

SAXPY = gpusim.load_workload("saxpy").folder
VOLATILE = ("cached", "wall_seconds")


def _key(**changes):
    base = {"workload": "saxpy", "workload_folder": SAXPY, "params": {"n": 4096, "block": 128},
            "config_hash": "abc", "seed": 0, "warp_scheduler": "gto"}
    return ResultCache.key(**{**base, **changes})


def _same(rows_a, rows_b):
    strip = [[{k: v for k, v in r.items() if k not in VOLATILE} for r in rows] for rows in (rows_a, rows_b)]
    return strip[0] == strip[1]


def _run(cache, blocks=(64, 128, 256), **kw):
    return sweep("saxpy", "a100", grid={"block": list(blocks)}, params={"n": 4096}, executor=LocalExecutor(1),
                 cache=cache, **kw)


def test_key_changes_with_everything_a_result_depends_on(tmp_path, monkeypatch):
    key = _key()
    assert key == _key() and len(key) == 64
    assert len({key, _key(params={"n": 4096, "block": 256}), _key(config_hash="abd"), _key(seed=1),
                _key(warp_scheduler="lrr"), _key(workload="saxpy2")}) == 6
    copy = tmp_path / "saxpy"
    shutil.copytree(SAXPY, copy)
    assert _key(workload_folder=copy) == key  # the same files
    (copy / "saxpy.sasm").write_text((copy / "saxpy.sasm").read_text() + "\n// edited\n")
    cache_mod.workload_hash.cache_clear()
    assert _key(workload_folder=copy) != key
    monkeypatch.setattr(cache_mod, "code_version", lambda: "another-version")
    assert _key() != key


def test_code_version_hashes_the_package_sources(tmp_path, monkeypatch):
    pkg = tmp_path / "gpusim"
    shutil.copytree(cache_mod.PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache_mod, "PACKAGE", pkg)
    version = cache_mod.code_version.__wrapped__
    before = version()
    assert version() == before and len(before) == 16
    (pkg / "timing" / "l2.py").write_text((pkg / "timing" / "l2.py").read_text() + "\n# changed\n")
    assert version() != before


def test_entries_round_trip_and_corrupt_ones_are_reported_deleted_and_missed(tmp_path):
    cache = ResultCache(tmp_path)
    outcome = {"verified": True, "mismatch": None, "wall_seconds": 0.5, "verdict": "latency-bound",
               "verdict_reason": "", "metrics": {"cycles": 577, "ipc": 0.123456789012345, "l1_hit_rate_pct": None}}
    cache.put("k1", outcome)
    assert cache.get("k1") == outcome and cache.get("k2") is None
    path = cache.path("k1")
    assert path.parent == tmp_path / "sweep" and [p.name for p in path.parent.iterdir()] == ["k1.json"]
    good = path.read_text()
    entry = json.loads(good)
    tampered = {**entry, "outcome": {**outcome, "verified": False}}
    for text, problem in ((good[: len(good) // 2], "not valid JSON"),
                          (json.dumps({**entry, "key": "k9"}), "not its own"),
                          (json.dumps(tampered), "checksum mismatch"),
                          ("[1, 2]", "not a cache entry")):
        path.write_text(text)
        with pytest.warns(CacheWarning, match=problem):
            assert cache.get("k1") is None
        assert not path.exists()


def test_default_folder_is_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path))
    assert ResultCache().folder == tmp_path
    monkeypatch.delenv("GPUSIM_CACHE_DIR")
    assert ResultCache().folder == Path.home() / ".cache" / "gpusim"


def test_a_rerun_simulates_nothing_and_gives_the_same_rows(tmp_path, simulations):
    cache = ResultCache(tmp_path)
    first = _run(cache)
    assert len(simulations) == 3 and not any(r["cached"] for r in first.rows)
    second = _run(cache)
    assert len(simulations) == 3 and all(r["cached"] for r in second.rows)
    assert _same(first.rows, second.rows)
    assert [r["wall_seconds"] for r in first.rows] == [r["wall_seconds"] for r in second.rows]  # the original's
    third = _run(cache, seed=1)  # another seed is another result
    assert len(simulations) == 6 and not any(r["cached"] for r in third.rows)


def test_no_cache_and_a_changed_config_simulate_again(tmp_path, simulations):
    cache = ResultCache(tmp_path)
    _run(cache)
    _run(None)
    assert len(simulations) == 6
    over = sweep("saxpy", "a100", grid={"block": [64]}, params={"n": 4096}, overrides={"sm_count": [54]},
                 executor=LocalExecutor(1), cache=cache)
    assert len(simulations) == 7 and not over.rows[0]["cached"]


def test_a_corrupt_entry_is_warned_about_once_and_recomputed(tmp_path, simulations):
    cache = ResultCache(tmp_path)
    first = _run(cache)
    entries = sorted((tmp_path / "sweep").iterdir())
    assert len(entries) == 3
    entries[0].write_text(entries[0].read_text()[:40])
    with pytest.warns(CacheWarning) as caught:
        again = _run(cache)
    assert len(caught) == 1 and str(entries[0]) in str(caught[0].message)
    assert len(simulations) == 4 and sum(not r["cached"] for r in again.rows) == 1
    assert _same(first.rows, again.rows)
    assert json.loads(entries[0].read_text())["key"] == entries[0].stem  # rewritten whole


def test_an_interrupted_sweep_resumes_from_the_cache(tmp_path, simulations):
    cache = ResultCache(tmp_path)
    done = []

    def stop_after_two(row):
        done.append(row["point"])
        if len(done) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(cache, blocks=(32, 64, 128, 256), on_point=stop_after_two)
    assert len(simulations) == 2
    resumed = _run(cache, blocks=(32, 64, 128, 256))
    assert len(simulations) == 4
    assert [r["cached"] for r in resumed.rows] == [True, True, False, False]


def test_failed_points_are_not_cached(tmp_path, simulations):
    cache = ResultCache(tmp_path)
    _run(cache, blocks=(64, 2048))
    again = _run(cache, blocks=(64, 2048))
    assert len(simulations) == 3  # 64 once, 2048 twice
    assert [(r["status"], r["cached"]) for r in again.rows] == [("ok", True), ("error", False)]
    assert len(list((tmp_path / "sweep").iterdir())) == 1


def _corruptions(path, key):
    """Every kind of bad entry: (bytes written in place of the entry, the problem the warning names)."""
    good = path.read_bytes()
    entry = json.loads(good)
    return [
        (b"\xff\xfe" + good, "not UTF-8 text (byte 0xff at offset 0)"),  # bytes that are not text
        (good.decode().encode("utf-16"), "not UTF-8 text"),  # another encoding
        (b"\xef\xbb\xbf" + good, "not valid JSON"),  # UTF-8 with a byte-order mark
        (good[: len(good) // 2], "not valid JSON (truncated?)"),
        (b"", "not valid JSON"),
        (b"[" * 100_000, "not valid JSON"),  # nested past the parser's recursion limit
        (json.dumps({**entry, "key": "another"}).encode(), "another point's entry"),
        (json.dumps({**entry, "outcome": {}, "checksum": cache_mod._digest({})}).encode(), "the outcome lacks"),
    ]


def test_every_kind_of_corrupt_entry_is_warned_about_in_one_line_and_missed(tmp_path):
    cache = ResultCache(tmp_path)
    outcome = {"verified": True, "mismatch": None, "wall_seconds": 1.0, "metrics": {"cycles": 5}, "verdict": "x",
               "verdict_reason": "y"}
    cache.put("k1", outcome)
    path = cache.path("k1")
    for raw, problem in _corruptions(path, "k1"):
        path.write_bytes(raw)
        with pytest.warns(CacheWarning, match=re.escape(problem)) as caught:
            assert cache.get("k1") is None
        assert len(caught) == 1 and "\n" not in str(caught[0].message)
        assert not path.exists()
        cache.put("k1", outcome)
        assert cache.get("k1") == outcome


def test_a_folder_in_place_of_an_entry_is_a_miss(tmp_path):
    cache = ResultCache(tmp_path)
    cache.path("k1").mkdir(parents=True)
    with pytest.warns(CacheWarning, match="cannot be read"):
        assert cache.get("k1") is None


def test_a_sweep_recomputes_an_entry_of_bytes_and_goes_on(tmp_path, simulations):
    cache = ResultCache(tmp_path)
    first = _run(cache)
    entries = sorted((tmp_path / "sweep").iterdir())
    entries[1].write_bytes(b"\x80\x81 not text")
    with pytest.warns(CacheWarning, match="not UTF-8") as caught:
        again = _run(cache)
    assert len(caught) == 1 and len(simulations) == 4 and _same(first.rows, again.rows)


def test_the_compilers_stores_detect_the_same_corruptions(tmp_path):
    from gpusim.compiler.cost.simulated import SimulatedCost
    from gpusim.compiler.store import Store

    cost_store = SimulatedCost(tmp_path).store
    tune_store = Store(tmp_path, "tune", ("params", "cycles", "evaluated", "top", "measured"))
    for store, entry in ((cost_store, {"cycles": 5.0, "detail": {}}),
                         (tune_store, {"params": {}, "cycles": 5.0, "evaluated": 1, "top": [], "measured": []})):
        store.put("k", entry)
        path = store.path("k")
        assert path.parent.parent == tmp_path / "compiler"
        for raw, problem in _corruptions(path, "k"):
            path.write_bytes(raw)
            with pytest.warns(CacheWarning, match=re.escape(problem)):
                assert store.get("k") is None
            store.put("k", entry)
        assert store.get("k") == entry

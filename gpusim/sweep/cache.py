"""The sweep result cache: one JSON file per simulated point, named by a key that hashes everything the
result depends on, so a rerun of a sweep simulates only what changed.

An entry is `{"key": KEY, "checksum": SHA256 of the outcome, "outcome": {...}}` written atomically (a
temporary file and a rename). A file that cannot be read, is not UTF-8, does not parse (truncated,
another encoding, nested too deeply), names another key, fails its checksum or lacks the fields its
reader needs is reported in one line (a CacheWarning), deleted, and its point simulated again. Failed
points are not cached."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

from gpusim.stats.files import write_atomic

PACKAGE = Path(__file__).resolve().parents[1]  # the gpusim package


class CacheWarning(UserWarning):
    """A cache entry was unreadable or inconsistent; its point is simulated again."""


def default_dir() -> Path:
    """`$GPUSIM_CACHE_DIR`, else `~/.cache/gpusim`."""
    return Path(os.environ.get("GPUSIM_CACHE_DIR") or Path.home() / ".cache" / "gpusim")


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _tree_hash(folder: Path, pattern: str) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob(pattern)):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the gpusim package's source files: any change to the simulator invalidates the cache."""
    return _tree_hash(PACKAGE, "*.py")[:16]


@functools.lru_cache(maxsize=64)
def workload_hash(folder: str) -> str:
    """A hash of a workload folder's files (workload.yaml, the kernel, reference.py)."""
    return _tree_hash(Path(folder), "*")[:16]


class ResultCache:
    """Outcomes of simulated points under `folder`/sweep/ (default: `default_dir()`)."""

    def __init__(self, folder: str | os.PathLike | None = None):
        self.folder = Path(folder).expanduser() if folder is not None else default_dir()

    @staticmethod
    def key(*, workload: str, workload_folder: str | os.PathLike, params: dict[str, Any], config_hash: str,
            seed: int, warp_scheduler: str) -> str:
        """The key of a point: workload name and files, every parameter, the config's hash (after
        overrides), seed, warp scheduler and the gpusim code version."""
        return _digest({"workload": workload, "files": workload_hash(str(workload_folder)), "params": params,
                        "config_hash": config_hash, "seed": seed, "warp_scheduler": warp_scheduler,
                        "code": code_version()})

    def path(self, key: str) -> Path:
        return self.folder / "sweep" / f"{key}.json"

    redo = "simulating the point again"  # what the warning says happens next
    # the outcome's fields its reader needs; an entry without them is corrupt
    required: tuple[str, ...] = ("verified", "mismatch", "wall_seconds", "metrics", "verdict", "verdict_reason")

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached outcome for `key`, or None (absent, or corrupt: then warned about and deleted)."""
        path = self.path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:  # a folder in its place, no permission
            return self._reject(path, f"cannot be read ({exc.strerror or exc})")
        entry, problem = _parse(raw, key, self.required)
        if problem is None:
            return entry["outcome"]
        return self._reject(path, problem)

    def _reject(self, path: Path, problem: str) -> None:
        warnings.warn(f"cache entry {path}: {problem}; {self.redo}", CacheWarning, stacklevel=3)
        try:
            path.unlink(missing_ok=True)
        except OSError:  # a folder, or read-only: the fresh result's write will say so if it matters
            pass
        return None

    def put(self, key: str, outcome: dict[str, Any]) -> None:
        write_atomic(self.path(key), json.dumps({"key": key, "checksum": _digest(outcome), "outcome": outcome}))


def _parse(raw: bytes, key: str, required: tuple[str, ...]) -> tuple[Any, str | None]:
    """An entry's bytes -> (the entry, None), or (None, what is wrong with them)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})"
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return None, "not valid JSON (truncated?)"
    if not isinstance(entry, dict) or not {"key", "checksum", "outcome"} <= set(entry):
        return None, "not a cache entry"
    if entry["key"] != key:
        return None, f"holds key {str(entry['key'])[:16]}..., not its own (another point's entry)"
    try:
        same = entry["checksum"] == _digest(entry["outcome"])
    except (ValueError, RecursionError):  # an outcome json cannot write back (nested too deeply)
        same = False
    if not same:
        return None, "checksum mismatch"
    outcome = entry["outcome"]
    missing = [f for f in required if not isinstance(outcome, dict) or f not in outcome]
    if missing:
        return None, f"the outcome lacks {', '.join(missing)}"
    return entry, None


__all__ = ["CacheWarning", "ResultCache", "code_version", "default_dir", "workload_hash"]

"""The compiler's disk caches (simulated kernel costs, the tuner's best configurations): the sweep
cache's entries (JSON, checksummed, written atomically) under `folder`/compiler/`namespace`/, keyed by
a hash of everything the entry depends on."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from gpusim.sweep.cache import ResultCache


def digest(obj: Any) -> str:
    """A stable hash of JSON-able data."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class Store(ResultCache):
    """Entries under `folder` (default `$GPUSIM_CACHE_DIR`, else ~/.cache/gpusim)/compiler/`namespace`/."""

    def __init__(self, folder: str | os.PathLike | None, namespace: str, required: tuple[str, ...] = ()):
        super().__init__(folder)
        self.namespace = namespace
        self.required = required  # the fields an entry's reader needs (ResultCache.get)
        self.redo = "computing it again"

    def path(self, key: str) -> Path:
        return self.folder / "compiler" / self.namespace / f"{key}.json"

"""Writing results: every output file appears whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The process's umask, read once: os.umask can only be read by setting it, which would race with files
# other threads (a Dask worker's) create meanwhile.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename, so a reader
    never sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # as open() would create it, not mkstemp's owner-only mode
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

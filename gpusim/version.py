"""gpusim's version: the installed distribution's (pyproject.toml), as `gpusim --version` prints it and every
result records it. A module of its own beside all layers, so that a layer records the version without
importing the package's public API (gpusim/__init__.py), which imports the layers."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("gpusim")
except metadata.PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"

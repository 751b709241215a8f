"""Public names imported on first use (PEP 562), for a package's `__getattr__`: `import gpusim` or `import
gpusim.compiler` then loads no layer, so that a command that needs none starts at once (docs/bench.md,
start-up)."""

from __future__ import annotations

import importlib


def attribute(package: str, lazy: dict[str, str], namespace: dict, name: str):
    """`package`'s attribute `name`: from the module `lazy[name]`, else the subpackage or submodule `name`
    (`gpusim.stats` after a bare `import gpusim`); AttributeError if neither. Kept in `namespace` (the
    package's globals) so that it is imported once."""
    module = lazy.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif not name.startswith("_"):
        try:
            value = importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{name}":
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    namespace[name] = value
    return value

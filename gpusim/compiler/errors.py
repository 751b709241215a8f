"""The compiler's error types: a bad graph names its node and operator, anything else (an ONNX model it
cannot import, a missing input, an unknown pass) says what and where in one line."""

from __future__ import annotations

from gpusim.errors import GpusimError


class CompilerError(GpusimError):
    """The compiler cannot do what it was asked: an unsupported ONNX operator, a missing input, an unknown pass."""


class GraphError(CompilerError):
    """A graph is malformed: `node %name (op): what is wrong` (a cycle, a dangling input, an unknown
    operator, a shape or dtype mismatch)."""

    def __init__(self, message: str, node: str | None = None, op: str | None = None):
        self.node, self.op, self.reason = node, op, message
        where = f"node %{node}" if node is not None else ""
        if op is not None:
            where = f"{where} ({op})" if where else f"({op})"
        self._located(f"{where}: {message}" if where else message, message, node, op)

"""The calibrated cost model: the analytical model's terms as features, combined with coefficients
fitted to simulated cycles (cost/calibrate.py makes the training set and fits):

    kernel cycles = c . (roofline, waves x chain, waves x throughput, memory, dispatch, 1)

(roofline = max(compute, memory); the terms as in cost/analytical.py). The fit minimises the squared
*relative* error, sum ((c . x - y) / y)^2 over the training kernels (numpy least squares on rows scaled
by 1 / y), since the models are judged by their mean absolute percentage error. The coefficients ship
in gpusim/compiler/data/calibration.json.

`Calibration.refit` moves the coefficients toward new simulations (those a tuner ran: Tuner.refit):
the same relative least squares over the new kernels, plus `prior` pseudo-rows holding each coefficient
at its old value (relative to its size), so a few new kernels adjust the model rather than replace
the fit made on the full training set."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.compiler.cost.analytical import terms
from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.kernel import Kernel
from gpusim.compiler.store import digest
from gpusim.config import Config
from gpusim.stats.files import write_atomic

FEATURES = ("roofline", "chain", "throughput", "memory", "dispatch", "one")
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "calibration.json"


def features(kernel: Kernel, cfg: Config) -> np.ndarray:
    """The feature vector (FEATURES) of `kernel` on `cfg`."""
    t = terms(kernel, cfg)
    return np.array([max(t.compute, t.memory), t.waves * t.chain, t.waves * t.throughput, t.memory, t.dispatch, 1.0])


def mape(predicted: Sequence[float], actual: Sequence[float]) -> float:
    """Mean absolute percentage error of `predicted` against `actual`, in percent."""
    p, a = np.asarray(predicted, dtype=float), np.asarray(actual, dtype=float)
    return float(100.0 * np.mean(np.abs(p - a) / a))


@dataclass(frozen=True, slots=True)
class Calibration:
    """Fitted coefficients, one per feature, and what they were fitted on (`training`)."""

    coefficients: tuple[float, ...]
    training: dict[str, Any] = field(default_factory=dict)

    def predict(self, x: np.ndarray) -> float:
        """Kernel cycles for feature vector `x` (at least 1)."""
        return max(1.0, float(np.dot(self.coefficients, x)))

    def refit(self, x: np.ndarray, y: np.ndarray, prior: float = 4.0) -> Calibration:
        """The coefficients refitted to kernels with features `x` (rows) and simulated cycles `y`, held
        to the current ones with the weight of `prior` kernels (module docstring); `training` counts
        the refits and the kernels they saw."""
        x, y = np.asarray(x, dtype=float).reshape(-1, len(FEATURES)), np.asarray(y, dtype=float)
        old = np.asarray(self.coefficients)
        scale = np.maximum(np.abs(old), 1e-6)
        rows = np.vstack([x / y[:, None], np.sqrt(prior) * np.diag(1 / scale)])
        target = np.concatenate([np.ones_like(y), np.sqrt(prior) * old / scale])
        coefficients, *_ = np.linalg.lstsq(rows, target, rcond=None)
        training = dict(self.training)
        training["refits"] = int(training.get("refits", 0)) + 1
        training["refit_kernels"] = int(training.get("refit_kernels", 0)) + len(y)
        return Calibration(tuple(float(c) for c in coefficients), training)

    def save(self, path: str | os.PathLike = DEFAULT_PATH) -> None:
        write_atomic(path, json.dumps({"features": FEATURES, "coefficients": self.coefficients,
                                       "training": self.training}, indent=2) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike = DEFAULT_PATH) -> Calibration:
        try:
            data = json.loads(Path(path).read_text())
            if tuple(data["features"]) != FEATURES:
                raise ValueError(f"features {data['features']}, expected {list(FEATURES)}")
            return cls(tuple(float(c) for c in data["coefficients"]), data.get("training", {}))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CompilerError(f"calibration {path}: {e}; refit with `python -m gpusim.compiler.cost.calibrate`")\
                from None


def fit(x: np.ndarray, y: np.ndarray, training: dict[str, Any] | None = None) -> Calibration:
    """Coefficients minimising the squared relative error of X c against y (rows of X: features)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(y) < x.shape[1]:
        raise CompilerError(f"fitting {x.shape[1]} coefficients needs at least as many kernels, got {len(y)}")
    coefficients, *_ = np.linalg.lstsq(x / y[:, None], np.ones_like(y), rcond=None)
    return Calibration(tuple(float(c) for c in coefficients), dict(training or {}))


class CalibratedCost(CostModel):
    """The analytical terms, weighted by a Calibration (default: the shipped one)."""

    name = "calibrated"

    def __init__(self, calibration: Calibration | None = None):
        self.calibration = calibration or Calibration.load()

    @property
    def key(self) -> str:
        return f"{self.name}-{digest(self.calibration.coefficients)[:12]}"

    def kernel_cycles(self, kernel: Kernel, cfg: Config) -> tuple[float, dict[str, Any]]:
        x = features(kernel, cfg)
        return self.calibration.predict(x), dict(zip(FEATURES[:-1], x[:-1].tolist(), strict=True))

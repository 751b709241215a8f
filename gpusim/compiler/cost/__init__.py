"""Cost models: `CostModel.cost(kernel, cfg) -> Estimate`, in three kinds — `SimulatedCost` (the timing
model, cached on disk), `AnalyticalCost` (roofline with occupancy and latency terms), `CalibratedCost`
(the analytical terms with coefficients fitted to simulated cycles) — and fusion decided by cost."""

from gpusim.compiler.cost.analytical import AnalyticalCost, Terms, terms
from gpusim.compiler.cost.base import CostModel, Estimate, launch_overhead_cycles
from gpusim.compiler.cost.calibrated import CalibratedCost, Calibration, features, fit, mape
from gpusim.compiler.cost.fusion import alternative_costs, cost_based_fusion
from gpusim.compiler.cost.simulated import SimulatedCost
from gpusim.compiler.errors import CompilerError

MODELS = ("analytical", "calibrated", "simulated")


def make_cost_model(name: str, cache_dir: str | None = None, **simulated) -> CostModel:
    """A cost model by name (MODELS); `cache_dir` and `simulated` (SimulatedCost's keyword options:
    sample, sample_budget, jobs, executor, ...) for the simulated one."""
    if name == "analytical":
        return AnalyticalCost()
    if name == "calibrated":
        return CalibratedCost()
    if name == "simulated":
        return SimulatedCost(cache_dir, **simulated)
    raise CompilerError(f"unknown cost model {name!r}; the models are {', '.join(MODELS)}")


__all__ = ["MODELS", "AnalyticalCost", "Calibration", "CalibratedCost", "CostModel", "Estimate", "SimulatedCost",
           "Terms", "alternative_costs", "cost_based_fusion", "features", "fit", "launch_overhead_cycles",
           "make_cost_model", "mape", "terms"]

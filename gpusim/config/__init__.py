"""Hardware configurations: the typed schema (`schema.py`) and the YAML loader (`loader.py`).

    >>> from gpusim.config import load_config
    >>> cfg = load_config("a100", overrides={"chip.sm_count": 54})
    >>> cfg.chip.sm_count, cfg.derived()["total_fp32_cores"]
    (54, 3456)
"""

from gpusim.config.loader import builtin_configs, config_dirs, load_config
from gpusim.config.schema import (
    ChipSpec,
    Config,
    DramSpec,
    L1Spec,
    L2Spec,
    LaunchSpec,
    NvlinkSpec,
    PcieSpec,
    SchedulerSpec,
    SharedMemorySpec,
    SMSpec,
    UnitSpec,
    UnitTable,
)

__all__ = [
    "load_config", "builtin_configs", "config_dirs", "Config", "ChipSpec", "SMSpec", "UnitSpec", "UnitTable",
    "L1Spec", "SharedMemorySpec", "L2Spec", "DramSpec", "SchedulerSpec", "LaunchSpec", "PcieSpec",
    "NvlinkSpec",
]

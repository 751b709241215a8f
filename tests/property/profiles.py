"""Hypothesis settings for tests/property.

Two profiles, picked by the environment variable HYPOTHESIS_PROFILE:

- `ci` (the default): derandomized, so every run of the suite tries the same examples and a failure
  reproduces by simply running the test again; the example counts given to `budget()`.
- `long`: fresh random examples on every run and 20 times as many of them, for hunting bugs:
  `HYPOTHESIS_PROFILE=long pytest tests/property`.

Neither writes an example database (failures print the falsifying example and a reproduction blob)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("gpusim-ci", derandomize=True, **_COMMON)
settings.register_profile("gpusim-long", derandomize=False, **_COMMON)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    raise ValueError(f"HYPOTHESIS_PROFILE={PROFILE!r}: tests/property knows 'ci' (default) and 'long'")
SCALE = 20 if PROFILE == "long" else 1


def budget(examples: int, **kw) -> settings:
    """Settings for a property with `examples` examples under the `ci` profile (20x under `long`)."""
    return settings(settings.get_profile(f"gpusim-{PROFILE}"), max_examples=examples * SCALE, **kw)

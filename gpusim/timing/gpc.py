"""A graphics processing cluster: a group of SMs (in TPC pairs on real parts) sharing a raster
engine; to the compute model it is the unit the GigaThread engine spreads blocks over first."""

from __future__ import annotations


class GPC:
    def __init__(self, index: int):
        self.index = index
        self.sms: list = []

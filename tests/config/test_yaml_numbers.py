"""Numbers in YAML read as people write them; what YAML 1.1 reads otherwise (base-60, yes/no/on/off,
leading-zero octal) is refused with `file:line: field: ...`."""

from __future__ import annotations

import pytest

from gpusim.config import load_config
from gpusim.errors import ConfigError


def _load(tmp_path, text: str):
    path = tmp_path / "c.yaml"
    path.write_text("extends: a100\n" + text + "\n")
    return load_config(path), path


@pytest.mark.parametrize(("text", "field", "value"), [
    ("chip: {clock_mhz: 1e3}", "chip.clock_mhz", 1000.0),
    ("chip: {clock_mhz: 1.41e3}", "chip.clock_mhz", 1410.0),
    ("chip: {clock_mhz: 1_410}", "chip.clock_mhz", 1410.0),
    ("chip: {global_memory_bytes: 4e9}", "chip.global_memory_bytes", 4_000_000_000),
    ("chip: {sm_count: 0x36}", "chip.sm_count", 54),
    ("description: 2024-01-01", "description", "2024-01-01"),
    ("chip: {architecture: '1:48'}", "chip.architecture", "1:48"),
    ("dram: {technology: 'no'}", "dram.technology", "no"),
])
def test_numbers_and_text_read_as_written(tmp_path, text, field, value):
    cfg, _ = _load(tmp_path, text)
    section, _, name = field.rpartition(".")
    got = getattr(getattr(cfg, section), name) if section else getattr(cfg, name)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(("text", "field", "reason"), [
    ("chip: {sm_count: 1:48}", "chip.sm_count", "'1:48' is a YAML 1.1 base-60 number (108)"),
    ("chip: {clock_mhz: 23:30.5}", "chip.clock_mhz", "'23:30.5' is a YAML 1.1 base-60 number (1410.5)"),
    ("l1: {write_allocate: yes}", "l1.write_allocate", "'yes' is a YAML 1.1 boolean (true): write true or false"),
    ("pcie: {full_duplex: off}", "pcie.full_duplex", "'off' is a YAML 1.1 boolean (false)"),
    ("dram: {technology: NO}", "dram.technology", "'NO' is a YAML 1.1 boolean (false)"),
    ("chip: {sm_count: 054}", "chip.sm_count", "'054' has a leading zero, which YAML 1.1 reads as octal"),
    ("chip: {sm_count: 1.5}", "chip.sm_count", "expected an integer, got float 1.5"),
])
def test_yaml_1_1_oddities_are_refused_where_they_stand(tmp_path, text, field, reason):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, text)
    err = info.value
    assert (err.line, err.field) == (2, field) and reason in err.reason
    assert str(err).startswith(f"{tmp_path / 'c.yaml'}:2: {field}: ")

"""Loading a config fast: files are composed by libyaml where PyYAML has it (gpusim.config.loader._compose),
with the same node trees as the pure-Python loader and the same errors (those come from the Python loader);
a file loaded without overrides is not loaded again to find what a Config changes in it."""

import os
from pathlib import Path

import pytest
import yaml

from gpusim.config import loader as L
from gpusim.data import data_dir
from gpusim.errors import ConfigError

CONFIGS = sorted(Path(data_dir("configs")).glob("*.yaml"))


def _same(a, b):
    assert type(a) is type(b) and a.tag == b.tag and a.start_mark.line == b.start_mark.line
    if isinstance(a, yaml.ScalarNode):
        assert a.value == b.value and (a.style or None) == (b.style or None)
    elif isinstance(a, yaml.MappingNode):
        for (ka, va), (kb, vb) in zip(a.value, b.value, strict=True):
            _same(ka, kb)
            _same(va, vb)
    else:
        for x, y in zip(a.value, b.value, strict=True):
            _same(x, y)


@pytest.mark.skipif(L._CLoader is None, reason="PyYAML without libyaml")
@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_libyaml_composes_every_builtin_config_as_the_python_loader_does(path):
    text = path.read_text()
    _same(yaml.compose(text, Loader=L._Loader), L._compose(text))


@pytest.mark.skipif(L._CLoader is None, reason="PyYAML without libyaml")
def test_libyaml_path_keeps_the_yaml_11_oddities_and_quoted_text_apart():
    node = L._compose("a: yes\nb: 'yes'\nc: 1e9\n")
    (_, a), (_, b), (_, c) = node.value
    assert L._yaml11_oddity(a) is not None  # plain: refused
    assert L._yaml11_oddity(b) is None  # quoted: text
    assert c.tag == "tag:yaml.org,2002:float"


def test_nesting_past_the_limit_is_an_error_with_its_line(tmp_path):
    f = tmp_path / "deep.yaml"
    f.write_text("chip:\n  x: " + "[" * (L.MAX_DEPTH + 5) + "]" * (L.MAX_DEPTH + 5) + "\n")
    with pytest.raises(ConfigError) as e:
        L.load_config(f)
    assert e.value.line == 2 and f"nested more than {L.MAX_DEPTH} levels deep" in str(e.value)


def test_malformed_yaml_is_reported_by_the_python_loader(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("chip:\n  sm_count: 4\n bad: [\n")
    with pytest.raises(ConfigError) as e:
        L.load_config(f)
    with pytest.raises(yaml.MarkedYAMLError) as py:
        yaml.compose(f.read_text(), Loader=L._Loader)
    assert e.value.line == py.value.problem_mark.line + 1 and py.value.problem in str(e.value)


def test_config_overrides_compares_with_the_file_as_it_is_now(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("extends: a100\nchip:\n  sm_count: 100\n")
    plain = L.load_config(f)
    assert L.config_overrides(plain) == {}
    assert L.config_overrides(L.load_config(f, overrides={"chip.sm_count": 90})) == {"chip.sm_count": 90}
    f.write_text("extends: a100\nchip:\n  sm_count: 80\n")  # edited: a new version of the file
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert L.config_overrides(plain) == {"chip.sm_count": 100}


def test_the_configs_kept_as_filed_are_one_per_file_whatever_its_versions(tmp_path):
    f = tmp_path / "mine.yaml"
    for i, n in enumerate((100, 80, 60)):
        f.write_text(f"extends: a100\nchip:\n  sm_count: {n}\n")
        st = os.stat(f)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + (i + 1) * 10**9))  # a new version each time
        cfg = L.load_config(f)
        assert L.config_overrides(cfg) == {}
    kept = [key for key in L._AS_FILED if key == str(f)]
    assert kept == [str(f)] and L._AS_FILED[str(f)][1].chip.sm_count == 60

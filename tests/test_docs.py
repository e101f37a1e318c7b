"""The documents that list the algorithms stay in step with the registry."""
import inspect
import re
from pathlib import Path

import pytest

import cwkit
from cwkit.base import COMMON

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = {entry["name"]: entry for entry in cwkit.algorithms()}


def _cells(line):
    """The cells of a markdown table row (``\\|`` is a pipe inside a cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def _tables(text):
    """Each table of `text` as (header cells, list of row cells)."""
    tables, rows = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            if rows is None:
                tables.append((_cells(line), rows := []))
            elif not line.startswith("| ---"):
                rows.append(_cells(line))
        else:
            rows = None
    return tables


def _names(cell):
    return re.findall(r"`([^`]+)`", cell)


def _algorithms_md():
    return (ROOT / "docs" / "algorithms.md").read_text(encoding="utf-8")


def _documented_params():
    """(name, parameter) -> (default, valid values) from the tables of docs/algorithms.md."""
    out = {}
    for header, rows in _tables(_algorithms_md()):
        if header[:4] != ["parameter", "names", "default", "valid values"]:
            continue
        for row in rows:
            (param,), default, valid = _names(row[0]), row[2], row[3]
            for name in _names(row[1]):
                assert (name, param) not in out, f"{name}.{param} is documented twice"
                out[name, param] = (default, valid)
    return out


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_algorithms_md_has_every_name_with_its_parameters(name):
    text = _algorithms_md()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert any(f"`{name}`" in h for h in headings), f"no section of docs/algorithms.md for {name}"
    documented = _documented_params()
    for param, info in ALGORITHMS[name]["params"].items():
        assert (name, param) in documented, f"docs/algorithms.md lacks {name}.{param}"
        assert documented[name, param] == (f"`{info['default']!r}`", info["valid"]), \
            f"{name}.{param}"


def test_algorithms_md_lists_no_parameter_the_registry_lacks():
    stale = {(n, p) for n, p in _documented_params()
             if n not in ALGORITHMS or p not in ALGORITHMS[n]["params"]}
    assert not stale


def test_algorithms_md_lists_the_common_parameters_with_their_defaults():
    table = next(rows for header, rows in _tables(_algorithms_md())
                 if header[:3] == ["parameter", "default", "valid values"])
    documented = {_names(row[0])[0]: (row[1], row[2]) for row in table}
    defaults = inspect.signature(cwkit.PassiveAggressive).parameters  # (every rule's but
    assert documented == {p: (f"`{defaults[p].default!r}`", c.describe())  # perceptron's)
                          for p, c in COMMON.items()}


def test_readme_table_names_every_registry_parameter():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Algorithms"):]
    rows = next(rows for header, rows in _tables(section)
                if header == ["name", "rule", "hyper-parameters"])
    seen = set()
    for row in rows:
        names, params = _names(row[0]), set(_names(row[2]))
        assert params == {p for n in names for p in ALGORITHMS[n]["params"]}, row[0]
        seen.update(names)
    assert seen == set(ALGORITHMS)


def test_readme_links_algorithms_md():
    assert "(docs/algorithms.md)" in (ROOT / "README.md").read_text(encoding="utf-8")

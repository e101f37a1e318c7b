"""The documents that list the algorithms stay in step with the registry."""
import inspect
import os
import subprocess
import sys
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


def test_algorithms_md_lists_every_regressor_parameter():
    documented = {}
    for header, rows in _tables(_algorithms_md()):
        if header[:4] == ["parameter", "regressors", "default", "valid values"]:
            for row in rows:
                documented.update({(name, _names(row[0])[0]): (row[2], row[3])
                                   for name in _names(row[1])})
    assert documented == {(e["name"], p): (f"`{info['default']!r}`", info["valid"])
                          for e in cwkit.regressors() for p, info in e["params"].items()}


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


# ---------------------------------------------------------------------------------------
# The docs are run: every fenced block of README.md and docs/*.md runs here as written, or
# carries a marker on the line before its fence saying why not:
#   <!-- not run: REASON -->      (a set-up, a benchmark, or data: the reason gives the recipe)
#   <!-- synopsis -->             (command synopses: every option named must exist)
#   <!-- run with: --OPT V ... --> (runs with those option values instead: a long
#                                   reproduction, made small; the full run is its own script)
# A block whose first line starts with `$ ` is a command and its printed sample: the run's
# stderr and stdout must match it line by line (timings masked, `...` ends a prefix).

DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
_MARKER = re.compile(r"<!--\s*(not run|synopsis|run with)\s*:?\s*(.*?)\s*-->")


def _blocks():
    """(file, line, language, marker, argument, text) of every fenced block."""
    found = []
    for name in DOCS:
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("```"):
                end = lines.index("```", i + 1)
                before = lines[i - 1] if i else ""
                marker = _MARKER.fullmatch(before.strip())
                found.append((name, i + 1, lines[i][3:].strip(),
                              marker.group(1) if marker else None,
                              marker.group(2) if marker else "",
                              "\n".join(lines[i + 1:end]) + "\n"))
                i = end
            i += 1
    return found


BLOCKS = _blocks()


def _block_id(block):
    return f"{block[0]}:{block[1]}"


def _kind(block):
    name, line, lang, marker, arg, text = block
    if marker:
        return marker
    if text.startswith("$ "):
        return "sample"
    if lang == "python":
        return "python"
    if lang in ("", "sh", "bash"):
        return "shell"
    return lang


def test_every_block_runs_or_says_why_not():
    """A block the suite does not run names its reason (the recipe for its data)."""
    for block in BLOCKS:
        kind = _kind(block)
        assert kind in ("sample", "python", "shell", "not run", "synopsis", "run with"), \
            f"{_block_id(block)}: a ```{block[2]} block that nothing runs"
        if kind == "not run":
            assert len(block[4]) > 20, f"{_block_id(block)}: say why it is not run"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A folder holding the files the docs' commands name (train.svm and train.svm.xz,
    test.svm, more.svm, a.svm, b.svm, c.svm: parts of the shipped data set; targets.svm
    and targets.t.svm: its rows with real-valued targets, a linear function of their
    features plus Gaussian noise), made the current folder."""
    import lzma

    import numpy as np

    from cwkit import datasets, dump_svmlight

    X, _ = datasets.load_breast_cancer()
    y = datasets.noisy_targets(X @ np.linspace(-2.0, 2.0, X.shape[1]) + 1.0, 0.1)
    dump_svmlight(X[:500], y[:500], tmp_path / "targets.svm")
    dump_svmlight(X[500:], y[500:], tmp_path / "targets.t.svm")
    rows = datasets.shipped_data_path().read_bytes().splitlines(keepends=True)
    (tmp_path / "train.svm").write_bytes(b"".join(rows[:500]))
    (tmp_path / "train.svm.xz").write_bytes(lzma.compress(b"".join(rows[:500])))
    (tmp_path / "test.svm").write_bytes(b"".join(rows[500:]))
    (tmp_path / "more.svm").write_bytes(b"".join(rows[500:600]))
    for i, name in enumerate("abc"):
        (tmp_path / f"{name}.svm").write_bytes(b"".join(rows[i * 220:(i + 1) * 220]))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run_shell(script, cwd, timeout=300):
    """Run ``script`` with bash as a user would type it, with this tree's cwkit and the
    interpreter running the tests as ``python`` (and its ``cwkit`` script)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "200"}
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, timeout=timeout,
                          capture_output=True, text=True)


def _normalised(text):
    """The lines of a command's output with what a run cannot repeat masked: the
    `seconds` and `examples/s` columns of a table, the seconds of its footer and of JSON."""
    out, mask = [], None
    for line in text.splitlines():
        if line.startswith("algo "):
            mask = (line.index(" passes") + len(" passes"),
                    line.index("examples/s") + len("examples/s"))
        elif not line.strip() or line.startswith("("):
            mask = None
        elif mask:
            line = line[:mask[0]] + " ~ ~ " + line[mask[1]:]
        line = re.sub(r"\d[\d.]* s in total", "~ s in total", line)
        line = re.sub(r'("seconds": )[-\d.e]+', r"\1~", line)
        out.append(" ".join(line.split()))
    while out and not out[-1]:
        out.pop()
    return out


def _matches(sample, actual):
    if len(sample) != len(actual):
        return False
    return all(a == s or (s.endswith("...") and a.startswith(s[:-3].rstrip()))
               for s, a in zip(sample, actual))


def _sample_command(text):
    """The command of a sample block (``$ `` lines with their ``\\`` continuations) and
    its printed output."""
    lines = text.splitlines()
    command = [lines[0][2:]]
    while command[-1].endswith("\\"):
        command.append(lines[len(command)])
    return "\n".join(command), "\n".join(lines[len(command):])


def _with_options(script, spec):
    """``script`` with each ``--OPT VALUE`` of ``spec`` given that value instead."""
    words = spec.split()
    for opt, value in zip(words[::2], words[1::2]):
        assert re.search(rf"{re.escape(opt)} \S+", script), f"{opt} not in the block"
        script = re.sub(rf"{re.escape(opt)} \S+", f"{opt} {value}", script)
    return script


@pytest.mark.parametrize("block", [b for b in BLOCKS if _kind(b) == "sample"], ids=_block_id)
def test_sample_output_is_what_the_command_prints(block, data_dir):
    command, sample = _sample_command(block[5])
    proc = _run_shell(command, data_dir)
    assert proc.returncode == 0, proc.stderr
    actual = proc.stderr + proc.stdout
    assert _matches(_normalised(sample), _normalised(actual)), \
        f"{_block_id(block)}: `{command}` now prints\n{actual}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if _kind(b) in ("shell", "run with")],
                         ids=_block_id)
def test_shell_block_runs(block, data_dir):
    script = block[5] if _kind(block) == "shell" else _with_options(block[5], block[4])
    proc = _run_shell(script, data_dir)
    assert proc.returncode == 0, f"{_block_id(block)}:\n{proc.stderr}"


def _python_namespace():
    """The placeholders the Python blocks use besides the files of `data_dir`: new rows
    to continue learning with and rows to predict."""
    from cwkit import datasets

    X, y = datasets.load_breast_cancer()
    return {"X_new": X[500:600], "y_new": y[500:600], "X_test": X[600:]}


@pytest.mark.parametrize("name", sorted({b[0] for b in BLOCKS if _kind(b) == "python"}))
def test_python_blocks_run(name, data_dir):
    """A document's Python blocks run in order, in one namespace, as a reader runs them."""
    namespace = _python_namespace()
    for block in BLOCKS:
        if block[0] == name and _kind(block) == "python":
            exec(compile(block[5], _block_id(block), "exec"), namespace)


@pytest.mark.parametrize("block", [b for b in BLOCKS if _kind(b) == "synopsis"], ids=_block_id)
def test_synopsis_names_only_options_that_exist(block):
    from cwkit.cli import _build_parser

    commands = _build_parser()[1]
    for line in block[5].splitlines():
        words = line.split()
        assert words[:3] == ["python", "-m", "cwkit"] and words[3] in commands, line
        known = {o for a in commands[words[3]]._actions for o in a.option_strings}
        for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", " ".join(words[4:])):
            assert option in known, f"{line}: {option}"


def test_install_advice_works_without_an_index_entry():
    """cwkit is installed from a clone, not from a package index: no document or message
    advises ``pip install "cwkit[dask]"`` (cwkit.distributed's message without Dask:
    tests/test_distributed.py)."""
    texts = [ROOT / name for name in DOCS] + sorted((ROOT / "cwkit").glob("*.py"))
    assert not [p.name for p in texts if "cwkit[" in p.read_text(encoding="utf-8")]


def test_references_module_is_docs_references_md():
    """``cwkit algos --references`` and ``--help`` print the citations of
    docs/references.md (an installed copy has no docs folder): the same keys and text."""
    from cwkit.references import REFERENCES

    table = next(rows for header, rows in _tables(
        (ROOT / "docs" / "references.md").read_text(encoding="utf-8"))
        if header[:2] == ["key", "reference"])
    assert REFERENCES == {row[0].strip("[]"): row[1].replace("*", "") for row in table}

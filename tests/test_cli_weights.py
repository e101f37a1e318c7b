"""The command line learns with importance weights: a Vowpal Wabbit file's, and
``--class-weight``, as ``partial_fit`` does with ``sample_weight`` and ``class_weight``."""
import numpy as np
import pytest
from test_vw import _vw_file

import cwkit
from cwkit.cli import main
from cwkit.vw import load_vw


def _same_state(a, b):
    sa, sb = a._model.state, b._model.state
    return sa.keys() == sb.keys() and all(np.array_equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("algo", ["pa2", "arow", "perceptron", "adagrad"])
@pytest.mark.parametrize("class_weight, option", [
    (None, []), ("balanced", ["--class-weight", "balanced"]),
    ({1: 3.0}, ["--class-weight", "1:3"]), ({-1: 0.5, 1: 2.0}, ["--class-weight=-1:0.5,1:2"]),
])
def test_train_learns_the_files_weights_and_class_weight(tmp_path, algo, class_weight,
                                                         option):
    path = _vw_file(tmp_path)          # importance weights 1 and 2
    X, y, w = load_vw(path)
    X = cwkit.text_rows(X)             # the command line's rows of a Vowpal Wabbit file
    assert set(w) == {1.0, 2.0}
    model = tmp_path / "m.cwk"
    assert main(["train", "--algo", algo, "-q", str(path), "-o", str(model), *option]) == 0
    want = cwkit.make(algo, class_weight=class_weight).partial_fit(
        X, y, classes=[-1, 1], sample_weight=w)
    got = cwkit.load(model)
    assert _same_state(got, want) and got.mistakes_ == want.mistakes_
    unweighted = cwkit.make(algo, class_weight=class_weight).partial_fit(X, y, classes=[-1, 1])
    assert not _same_state(got, unweighted)      # the weights were learnt


def test_weights_of_one_learn_as_none_and_eval_counts_them(tmp_path, capsys):
    path = _vw_file(tmp_path)
    ones = tmp_path / "ones.vw"
    ones.write_text("".join(f"{line.split()[0]} 1 {line.split(' ', 2)[2]}\n"
                            for line in path.read_text().splitlines()))
    X, y, w = load_vw(ones)
    X = cwkit.text_rows(X)
    assert (w == 1).all()
    model = tmp_path / "m.cwk"
    assert main(["train", "--algo", "arow", "-q", str(ones), "-o", str(model)]) == 0
    assert _same_state(cwkit.load(model), cwkit.make("arow").partial_fit(X, y, classes=[-1, 1]))
    assert main(["eval", "--algos", "pa1", "--format", "csv", "-q", str(path),
                 "--class-weight", "balanced"]) == 0
    X, y, w = load_vw(path)
    X = cwkit.text_rows(X)
    want = cwkit.make("pa1", class_weight="balanced").partial_fit(X, y, classes=[-1, 1],
                                                                  sample_weight=w)
    row = capsys.readouterr().out.splitlines()[1].split(",")
    assert int(row[5]) == want.mistakes_


@pytest.mark.parametrize("value, status, message", [
    ("7", 2, "expected balanced or CLASS:W"),
    ("1:-2", 2, "expected balanced or CLASS:W"),
    ("1:inf", 2, "expected balanced or CLASS:W"),
    ("7:2", 1, "class_weight names the label 7"),
])
def test_a_bad_class_weight_is_one_line(tmp_path, capsys, value, status, message):
    path = _vw_file(tmp_path)
    rc = main(["train", "--algo", "pa1", str(path), "-o", str(tmp_path / "m.cwk"),
               "--class-weight", value])
    err = capsys.readouterr().err
    assert rc == status and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "m.cwk").exists()


def test_the_kernel_forms_learn_a_weighted_file(tmp_path, capsys):
    """A kernel form (mini-batch PA's too) learns the file's weights, as partial_fit."""
    path = _vw_file(tmp_path)
    model = tmp_path / "m.cwk"
    assert main(["train", "--algo", "bpa1", "--param", "kernel=rbf", "--param", "gamma=0.5",
                 "-q", str(path), "-o", str(model)]) == 0, capsys.readouterr().err
    X, y, w = load_vw(path)
    want = cwkit.make("bpa1", kernel="rbf", gamma=0.5).partial_fit(
        cwkit.text_rows(X), y, classes=np.unique(y), sample_weight=w)
    assert _same_state(cwkit.load(model), want)

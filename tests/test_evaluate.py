"""cwkit.evaluate.train, the entry point of `cwkit train`: the model it fits is the one
an estimator's own fit / partial_fit gives on the rows in the same order, bit for bit."""
import os
import signal
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from cwkit import datasets
from cwkit.evaluate import AlgoSpec, Learner, train
from cwkit.registry import algorithms, make
from cwkit.sources import ArraySource, SvmlightSource

NAMES = [e["name"] for e in algorithms()]


def outputs(model, X):
    """What a fitted model shows: weights, scores, probabilities, round counter."""
    out = {"coef_": model.coef_, "intercept_": model.intercept_,
           "scores": model.decision_function(X), "t_": np.array(model.t_),
           "classes_": model.classes_}
    if hasattr(model, "predict_proba"):
        out["proba"] = model.predict_proba(X)
    return out


def assert_same_model(a, b, X, y):
    """Equal outputs bit for bit, now and after both learn ``X, y`` once more (so the
    state that outputs do not show, e.g. covariances or a pending mini-batch, agrees)."""
    for _ in range(2):
        out_a, out_b = outputs(a, X), outputs(b, X)
        assert out_a.keys() == out_b.keys()
        for key in out_a:
            assert out_a[key].dtype == out_b[key].dtype, key
            assert np.array_equal(out_a[key], out_b[key]), key
        a.partial_fit(X, y)
        b.partial_fit(X, y)


@pytest.mark.parametrize("name", NAMES)
def test_train_in_stored_order_is_fit_without_shuffling(name):
    """The shipped file streamed in chunks of 100 rows, two passes = fit(shuffle=False)."""
    X, y = datasets.load_breast_cancer()
    source = SvmlightSource(datasets.shipped_data_path(), batch_size=100)  # not scanned
    learner = train(source, AlgoSpec(name), passes=2)
    reference = make(name, shuffle=False, n_passes=2).fit(X, y)
    assert isinstance(learner, Learner) and learner.examples == 2 * y.size
    assert (learner.mistakes, learner.updates) == (reference.mistakes_, reference.n_updates_)
    assert_same_model(learner.model, reference, X, y)


@pytest.mark.parametrize("name", ["pa1", "arow", "sop", "bpa1", "l1-pa"])
def test_train_shuffled_is_partial_fit_in_that_order(name):
    """Pass p of seed s is numpy.random.default_rng([s, p]).permutation (one window)."""
    X, y = datasets.load_breast_cancer()
    source = ArraySource(X, y, "shipped", batch_size=64)
    spec = AlgoSpec(name, params={"fit_intercept": False})
    learner = train(source, spec, passes=3, shuffle=True, seed=7)
    reference = make(name, fit_intercept=False)
    for p in range(3):
        order = np.random.default_rng([7, p]).permutation(y.size)
        reference.partial_fit(X[order], y[order], classes=np.unique(y))
    assert_same_model(learner.model, reference, X, y)


@pytest.mark.parametrize("multiclass", [{"multiclass": "top1"}, {"multiclass": "topk", "k": 2},
                                        {"multiclass": "ovr"}])
def test_train_multiclass(multiclass):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(300, 3)), axis=1) * 10
    learner = train(ArraySource(X, y, "three", batch_size=50), AlgoSpec("arow"),
                    multiclass_params=multiclass)
    reference = make("arow", shuffle=False, **multiclass).fit(X, y)
    assert_same_model(learner.model, reference, X, y)
    assert learner.model.classes_.tolist() == [0, 10, 20]


def test_train_uses_the_spec_params():
    X, y = datasets.load_breast_cancer()
    learner = train(ArraySource(X, y, "shipped"), AlgoSpec("pa1", params={"C": 0.05}))
    assert learner.model.get_params()["C"] == 0.05
    assert_same_model(learner.model, make("pa1", C=0.05, shuffle=False).fit(X, y), X, y)


def test_the_python_example_of_docs_cli_runs(capsys):
    """The example of docs/cli.md, section "From Python", as written."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    section = doc[doc.index("## From Python"):]
    start = section.index("```python\n") + len("```python\n")
    code = section[start:section.index("\n```", start)]
    namespace = {}
    exec(code, namespace)
    out = capsys.readouterr().out
    assert "breast-cancer_scale.svm" in out and "arow *" in out
    assert namespace["model"].classes_.tolist() == [-1, 1]


def test_evaluate_keeps_going_past_a_failing_learner_and_reports_the_row():
    from cwkit.evaluate import evaluate

    X, y = datasets.make_twonorm(300, random_state=0)
    X[200, 5] = 1e200  # its squared norm overflows: every rule refuses row 201
    specs = [AlgoSpec("pa"), AlgoSpec("arow")]
    task = evaluate(ArraySource(X, y, "twonorm", batch_size=64), specs, shuffle=True,
                    cv=3)
    for res in task["results"]:
        assert res["failed"]["row"] == 201 and res["failed"]["file"] == "twonorm"
        assert res["failed"]["error"].startswith("the score or squared norm")


class _Progress:
    """A progress reporter for :func:`cwkit.evaluate.evaluate` whose ``update`` a test
    defines."""

    def start_run(self, label):
        pass

    def end_run(self):
        pass


def test_evaluate_interrupted_returns_what_is_done():
    from cwkit.evaluate import Interrupted, evaluate

    class StopAt(_Progress):
        def update(self, seen, learners, *where):
            if seen >= 128:
                raise KeyboardInterrupt

    X, y = datasets.make_twonorm(300, random_state=0)
    with pytest.raises(Interrupted) as info:
        evaluate(ArraySource(X, y, "twonorm", batch_size=64), [AlgoSpec("perceptron")],
                 progress=StopAt())
    task = info.value.result
    assert task["interrupted"] and task["results"][0]["examples"] == 128
    assert task["results"][0]["mistakes"] == make("perceptron").partial_fit(
        X[:128], y[:128]).mistakes_


# ------------------------------------------------ averaged and last iterate (test rows)

def _split(multiclass=False):
    if multiclass:
        rng = np.random.default_rng(3)
        X = rng.normal(size=(360, 6))
        y = np.argmax(X @ rng.normal(size=(6, 3)) + 0.8 * rng.normal(size=(360, 3)), axis=1)
    else:
        X, y = datasets.make_twonorm(360, random_state=1)
        X = X[:, :8] + np.random.default_rng(2).normal(scale=3.0, size=(360, 8))
    return X[:240], y[:240], X[240:], y[240:]


def _error(est, X, y):
    return float(np.mean(est.predict(X) != y))


@pytest.mark.parametrize("multiclass", [False, True], ids=["binary", "top1"])
@pytest.mark.parametrize("name", NAMES)
def test_test_errors_are_the_default_model_its_last_iterate_and_average(name, multiclass):
    """test_error = cwkit.make(name)'s (the model train saves), last_test_error =
    average=False's, avg_test_error = average=True's, on the same split, exactly; the
    online counters are the plain model's."""
    from cwkit.evaluate import evaluate

    X, y, Xt, yt = _split(multiclass)
    task = evaluate(ArraySource(X, y, "train", batch_size=50), [AlgoSpec(name)],
                    test=ArraySource(Xt, yt, "test", batch_size=70))
    (res,) = task["results"]
    classes = np.unique(y)
    default = make(name).partial_fit(X, y, classes=classes)
    avg = make(name, average=True).partial_fit(X, y, classes=classes)
    plain = make(name, average=False).partial_fit(X, y, classes=classes)
    assert res["failed"] is None
    assert res["test_error"] == _error(default, Xt, yt)
    assert res["avg_test_error"] == _error(avg, Xt, yt)
    assert res["last_test_error"] == _error(plain, Xt, yt)
    assert res["mistakes"] == plain.mistakes_ and res["updates"] == plain.n_updates_
    assert res["params"]["average"] is default._averaging()


def test_the_two_test_errors_differ_where_averaging_matters():
    """The test above can tell the two apart: on this split they differ for most rules."""
    from cwkit.evaluate import evaluate

    X, y, Xt, yt = _split()
    task = evaluate(ArraySource(X, y, "train"), [AlgoSpec(n) for n in NAMES],
                    test=ArraySource(Xt, yt, "test"))
    differ = [r["algo"] for r in task["results"]
              if r["avg_test_error"] != r["last_test_error"]]
    assert len(differ) >= len(NAMES) // 2, differ


@pytest.mark.parametrize("value", [False, True])
def test_average_set_explicitly_reports_that_model(value):
    from cwkit.evaluate import evaluate

    X, y, Xt, yt = _split()
    task = evaluate(ArraySource(X, y, "train"), [AlgoSpec("pa", {"average": value})],
                    test=ArraySource(Xt, yt, "test"))
    (res,) = task["results"]
    assert res["test_error"] == _error(make("pa", average=value).fit(X, y), Xt, yt)
    assert res["test_error"] == res["avg_test_error" if value else "last_test_error"]
    assert res["params"]["average"] is value


def test_without_test_rows_nothing_is_averaged_beyond_the_model():
    """No test rows: the learners are the models of their parameters (no second
    averaging state, no cost)."""
    from cwkit.evaluate import evaluate

    X, y, *_ = _split()
    task = evaluate(ArraySource(X, y, "train"), [AlgoSpec("pa"), AlgoSpec("arow")])
    for res in task["results"]:
        assert res["test_error"] is None and res["last_test_error"] is None
    assert not Learner(AlgoSpec("arow"), {}, np.unique(y), {}).model._averaging()
    assert Learner(AlgoSpec("arow"), {}, np.unique(y), {}, tested=True).model.average


def test_kernel_forms_average_where_they_can():
    """Every kernel form (first-order, second-order, mini-batch; averaged by default or
    not) is scored averaged and not, from one run."""
    from cwkit.evaluate import evaluate

    X, y, Xt, yt = _split()
    k = {"kernel": "rbf", "gamma": 0.1}
    specs = [AlgoSpec("pa1", k, label="pa1-rbf"), AlgoSpec("avg-perceptron", k, label="avg"),
             AlgoSpec("arow", k, label="arow-rbf"), AlgoSpec("bpa1", k, label="bpa1-rbf")]
    task = evaluate(ArraySource(X, y, "train"), specs, test=ArraySource(Xt, yt, "test"))
    for res, name, plain in zip(task["results"], ("pa1", "avg-perceptron", "arow", "bpa1"),
                                ("pa1", "perceptron", "arow", "bpa1")):
        assert res["failed"] is None
        averaged = make(name, **k) if name == "avg-perceptron" else make(name, **k,
                                                                          average=True)
        assert res["avg_test_error"] == _error(averaged.fit(X, y), Xt, yt)
        assert res["last_test_error"] == _error(make(plain, **k, average=False).fit(X, y),
                                                Xt, yt)
        assert res["test_error"] == _error(make(name, **k).fit(X, y), Xt, yt)


@pytest.mark.parametrize("options", [{"cv": 3}, {"repeats": 3, "shuffle": True}],
                         ids=["cv", "repeats"])
def test_folds_and_repeats_report_every_mean_and_sd(options):
    """Under --cv / --repeats, the averaged and last columns (mean, sd) are those of the
    runs with average=True and average=False given explicitly."""
    from cwkit.evaluate import evaluate

    X, y = datasets.make_twonorm(300, random_state=4)
    X = X + np.random.default_rng(5).normal(scale=2.0, size=X.shape)
    src = ArraySource(X, y, "twonorm", batch_size=64)
    test = None if "cv" in options else ArraySource(X[:100], y[:100], "t")
    names = ["pa", "arow", "sop"]
    default = evaluate(src, [AlgoSpec(n) for n in names], test=test, **options)
    explicit = evaluate(src, [AlgoSpec(n, {"average": v}, label=f"{n}{v}")
                              for n in names for v in (True, False)], test=test, **options)
    by = {r["algo"]: r for r in explicit["results"]}
    for res in default["results"]:
        avg, last = by[res["algo"] + "True"], by[res["algo"] + "False"]
        own = avg if res["params"]["average"] else last
        assert res["trials"] == 3
        for key, other in (("test", own), ("avg_test", avg), ("last_test", last)):
            assert (res[key + "_error"], res[key + "_error_sd"]) == (
                other["test_error"], other["test_error_sd"])
        assert res["last_test_error_sd"] is not None
        assert res["online_error"] == avg["online_error"] == last["online_error"]


def test_grid_tunes_on_the_held_out_error_of_the_model_reported():
    """--grid trains each value's reported model on part of the training rows and
    chooses by its error on the rest: the choice is the value with the least such
    error, computed here by hand, for the averaged model and for the last iterate."""
    from cwkit import evaluate as ev

    X, y, Xt, yt = _split()
    grid = {"C": [0.001, 0.1, 10.0]}
    src, test = ArraySource(X, y, "train"), ArraySource(Xt, yt, "test")
    index = np.arange(y.size)
    out = ev.datasets.row_uniform(ev._TUNE_SEED_OFFSET, index,
                                  stream=ev._TUNE_STREAM) < ev.TUNE_HOLDOUT
    rng = np.random.default_rng([ev._TUNE_SEED_OFFSET, 0])
    order = index[~out][rng.permutation(int((~out).sum()))]
    for average in (True, False):
        errors = [_error(make("pa1", C=C, average=average).fit(X[order], y[order]),
                         X[out], y[out]) for C in grid["C"]]
        res = ev.evaluate(src, [AlgoSpec("pa1", {"average": average}, grid=grid)],
                          test=test)["results"][0]
        C = grid["C"][int(np.argmin(errors))]
        assert res["tuned"] == {"C": C}, (average, errors)
        assert res["test_error"] == _error(make("pa1", C=C, average=average).fit(X, y),
                                           Xt, yt)


# ------------------------------------------------------- learners of a chunk on threads

def test_threaded_eval_equals_one_learner_after_another(monkeypatch):
    """The learners of a chunk run on a thread pool; the task object (mistakes, updates,
    test errors, curves, notes, the failure and its row) is the sequential run's."""
    import threading

    from cwkit import evaluate as ev
    from cwkit.models.interface import ModelError

    X, y = datasets.make_twonorm(700, random_state=0)
    arow_class, pa_class = type(make("arow")), type(make("pa"))
    arow_fit, pa_fit = arow_class.partial_fit, pa_class.partial_fit
    threads = set()

    def failing(self, X, y, *args, **kwargs):  # AROW fails at the 301st row it sees
        threads.add(threading.get_ident())
        seen = getattr(self, "_seen", 0)
        if seen + len(y) > 300:
            raise ModelError("arow: boom", row=300 - seen, reason="boom")
        self._seen = seen + len(y)
        return arow_fit(self, X, y, *args, **kwargs)

    def noisy(self, *args, **kwargs):  # each call of PA warns, from its own thread
        import warnings
        threads.add(threading.get_ident())
        warnings.warn(f"pa warns (c={self.C})", RuntimeWarning, stacklevel=2)
        return pa_fit(self, *args, **kwargs)

    monkeypatch.setattr(arow_class, "partial_fit", failing)
    monkeypatch.setattr(pa_class, "partial_fit", noisy)
    specs = [AlgoSpec("pa"), AlgoSpec("arow"), AlgoSpec("cw"),
             AlgoSpec("pa1", grid={"C": [0.1, 1.0]})]

    def run(cores):
        monkeypatch.setattr(ev, "usable_cores", lambda: cores)
        threads.clear()
        task = ev.evaluate(ArraySource(X[:500], y[:500], "twonorm", batch_size=64), specs,
                           test=ArraySource(X[500:], y[500:], "test"), noise=0.1,
                           curve_every=50, seed=3)
        task.pop("seconds")
        for res in task["results"]:
            res.pop("seconds")
        return task, len(threads)

    sequential, n_seq = run(1)
    threaded, n_threaded = run(4)
    assert n_threaded > n_seq   # the threaded run did run on more threads
    assert threaded == sequential
    pa, arow = threaded["results"][:2]
    assert arow["failed"]["row"] == 301 and arow["failed"]["error"] == "boom"
    assert len(pa["notes"]) == 1 and pa["notes"][0].startswith("RuntimeWarning: pa warns")
    assert threaded["results"][2]["notes"] == [] and threaded["results"][2]["failed"] is None


def test_threaded_eval_interrupted_in_a_learner_settles_the_others(monkeypatch):
    """Ctrl-C reaching one learner's thread stops the run once the other learners of the
    chunk are done, each with counters that match the rows it learnt."""
    from cwkit import evaluate as ev
    from cwkit.evaluate import Interrupted

    monkeypatch.setattr(ev, "usable_cores", lambda: 2)
    pa_class = type(make("pa"))
    pa_fit = pa_class.partial_fit

    def interrupted(self, X, y, *args, **kwargs):
        self._calls = getattr(self, "_calls", 0) + 1
        if self._calls == 3:
            raise KeyboardInterrupt
        return pa_fit(self, X, y, *args, **kwargs)

    monkeypatch.setattr(pa_class, "partial_fit", interrupted)
    X, y = datasets.make_twonorm(300, random_state=0)
    with pytest.raises(Interrupted) as info:
        ev.evaluate(ArraySource(X, y, "twonorm", batch_size=64),
                    [AlgoSpec("pa"), AlgoSpec("arow")])
    pa, arow = info.value.result["results"]
    assert pa["examples"] == 128 and arow["examples"] in (128, 192)
    n = arow["examples"]
    assert arow["mistakes"] == make("arow").partial_fit(X[:n], y[:n]).mistakes_


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="threads have no "
                    "signal mask here (Windows)")
def test_ctrl_c_while_a_chunk_is_handed_out_waits_for_its_learners(monkeypatch):
    """A SIGINT that arrives while the learners of a chunk are being handed to the pool is
    raised once they all are (signals are blocked meanwhile), and the run stops after they
    are done: their counters settled and their warnings kept in their notes."""
    from cwkit import evaluate as ev
    from cwkit.evaluate import Interrupted

    pa_class = type(make("pa"))
    pa_fit = pa_class.partial_fit

    def noisy(self, *args, **kwargs):
        import warnings
        time.sleep(0.05)    # (still learning when the interrupt is raised)
        warnings.warn("pa warns", RuntimeWarning, stacklevel=2)
        return pa_fit(self, *args, **kwargs)

    class Pool(ev.ThreadPoolExecutor):
        submits = 0

        def submit(self, *args, **kwargs):
            Pool.submits += 1
            if Pool.submits == 3:   # the second chunk, its first learner
                signal.raise_signal(signal.SIGINT)
            return super().submit(*args, **kwargs)

    monkeypatch.setattr(pa_class, "partial_fit", noisy)
    monkeypatch.setattr(ev, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(ev, "usable_cores", lambda: 2)
    X, y = datasets.make_twonorm(300, random_state=0)
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        with pytest.raises(Interrupted) as info:
            ev.evaluate(ArraySource(X, y, "twonorm", batch_size=64),
                        [AlgoSpec("pa"), AlgoSpec("arow")])
    pa, arow = info.value.result["results"]
    assert pa["examples"] == arow["examples"] == 128
    assert pa["notes"] == ["RuntimeWarning: pa warns (2 times)"] and leaked == []


@pytest.mark.parametrize("cores, n_jobs, pool", [(2, 1, 2), (4, 1, 3), (4, 3, 3),
                                                 (2, "array", 2), (1, 1, 1)])
def test_learner_threads_are_the_cores(tmp_path, monkeypatch, cores, n_jobs, pool):
    """Three learners: a pool of a thread per core, at most one per learner, whatever the
    source's parsing threads (up to four pieces ahead, they idle while the learners are
    the slower side); one core: the learners take turns on one thread. The results are
    those of one learner at a time."""
    from cwkit import evaluate as ev
    from cwkit.svmlight import dump_svmlight

    X, y = datasets.make_twonorm(600, random_state=1)
    path = tmp_path / "d.svm"
    dump_svmlight(X, y, path)
    made = []

    class Pool(ev.ThreadPoolExecutor):
        def __init__(self, workers, **kw):
            made.append(workers)
            super().__init__(workers, **kw)

    monkeypatch.setattr(ev, "usable_cores", lambda: cores)
    monkeypatch.setattr(ev, "ThreadPoolExecutor", Pool)
    specs = [AlgoSpec("pa"), AlgoSpec("cw"), AlgoSpec("arow")]
    src = (ArraySource(X, y, "twonorm", batch_size=100) if n_jobs == "array"
           else SvmlightSource(path, batch_size=100, n_jobs=n_jobs))
    results = ev.evaluate(src, specs)["results"]
    assert made == [pool]
    for spec, res in zip(specs, results):
        assert res["mistakes"] == make(spec.name).partial_fit(X, y).mistakes_


# ------------------------------------------------ signals reach the main thread

def _blocked_signals(thread):
    """The signals ``thread`` blocks, from Linux's /proc (SigBlk, a hexadecimal mask);
    None when it has not started or has ended meanwhile."""
    if thread.native_id is None:
        return None
    try:
        with open(f"/proc/self/task/{thread.native_id}/status") as f:
            mask = int(next(ln for ln in f if ln.startswith("SigBlk:")).split()[1], 16)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return {s for s in (signal.SIGINT, signal.SIGTERM) if mask >> (s - 1) & 1}


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="threads have no "
                    "signal mask here (Windows)")
def test_helper_threads_block_signals_from_their_first_instruction():
    """A thread cwkit starts has SIGINT and SIGTERM blocked before it runs any code of its
    own (a signal taken before it blocked them itself could be lost); the starting
    thread's mask is as it was, and a SIGINT raised meanwhile reaches it afterwards."""
    from cwkit._threads import signals_blocked, start

    first = []
    thread = threading.Thread(target=lambda: first.append(
        signal.pthread_sigmask(signal.SIG_BLOCK, [])))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    start(thread)
    thread.join()
    assert {signal.SIGINT, signal.SIGTERM} <= first[0]
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    with pytest.raises(KeyboardInterrupt):
        with signals_blocked():
            signal.raise_signal(signal.SIGINT)      # pending until the block ends
            caught = "not yet"
        caught = "too late"
    assert caught == "not yet"


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux's /proc")
def test_helper_threads_leave_sigint_to_the_main_thread(tmp_path, monkeypatch):
    """Every thread an eval starts (the learners' pool, the reader's prefetch and parsing
    threads) blocks SIGINT and SIGTERM: a Ctrl-C that the operating system hands to one of
    them would not wake the main thread waiting for it (on CPython 3.11 it could be lost)."""
    from cwkit import evaluate as ev
    from cwkit.svmlight import dump_svmlight

    X, y = datasets.make_twonorm(3000, random_state=0)
    path = tmp_path / "d.svm"
    dump_svmlight(X, y, path)
    seen = {}
    before = set(threading.enumerate())    # (threads other tests left, e.g. Dask's)

    class Look(_Progress):
        def update(self, n, learners, *where):
            for t in threading.enumerate():
                mask = None if t in before else _blocked_signals(t)
                if mask is not None:
                    seen.setdefault(t.name, mask)

    # (4 cores: the 2 that 2 parsing threads leave make a pool of learner threads)
    monkeypatch.setattr(ev, "usable_cores", lambda: 4)
    ev.evaluate(SvmlightSource(path, batch_size=500, n_jobs=2),
             [AlgoSpec("pa"), AlgoSpec("arow")], progress=Look())
    names = " ".join(seen)
    assert "cwkit-svmlight-prefetch" in names and "cwkit-svmlight-parse" in names, seen
    assert "ThreadPoolExecutor" in names, seen
    assert all(b == {signal.SIGINT, signal.SIGTERM} for b in seen.values()), seen
    assert _blocked_signals(threading.main_thread()) == set()


# ------------------------------------------------- rows the svmlight parser has checked

def _svmlight_task(tmp_path, multiclass=False):
    X, y = datasets.make_twonorm(600, random_state=1)
    if multiclass:
        y = np.arange(y.size) % 3
    X = np.where(np.abs(X) > 0.8, X, 0.0)     # sparse rows, some empty ones included
    X[::37] = 0.0
    path = tmp_path / "task.svm"
    from cwkit import dump_svmlight
    dump_svmlight(X, y, path)
    return path


@pytest.mark.parametrize("hash_bits", [None, 3])
def test_parsed_rows_are_the_rows_as_rows_makes(tmp_path, hash_bits):
    """The chunks of a file source are taken as the parser checked them
    (``parsed_rows``): the same rows as ``as_rows`` makes, so every model learns the same;
    with hash_bits (folded sums) the source does not vouch for them."""
    from cwkit._rowdata import as_rows, parsed_rows
    from cwkit.sources import FilteredSource

    src = SvmlightSource(_svmlight_task(tmp_path), batch_size=128, hash_bits=hash_bits)
    src.scan()
    assert src.parsed is (hash_bits is None)
    assert FilteredSource(src, [1], [-1], "t").parsed is src.parsed
    assert ArraySource(np.eye(2), [0, 1], "a").parsed is False
    models = {kind: [make("arow"), make("pa1")] for kind in ("parsed", "checked")}
    for k, (X, y, _) in enumerate(src.chunks()):
        for piece in (X, X[1::2]):      # (a row subset too: X[mask] of a filtered task)
            parsed, checked = parsed_rows(piece), as_rows(piece)
            assert parsed.X is piece and (parsed.n_rows, parsed.n_features) == \
                (checked.n_rows, checked.n_features)
        for kind, rows in (("parsed", parsed_rows(X)), ("checked", X)):
            for m in models[kind]:
                m.partial_fit(rows, y, **({"classes": [-1, 1]} if k == 0 else {}))
    for a, b in zip(models["parsed"], models["checked"]):
        assert_same_model(a, b, *next((X, y) for X, y, _ in src.chunks()))


@pytest.mark.parametrize("multiclass", [False, True])
def test_eval_of_a_file_is_the_eval_of_its_rows_checked(tmp_path, monkeypatch, multiclass):
    """An eval of a file source (its chunks taken as parsed, unchecked) gives the task
    object of the same source whose chunks go through ``as_rows`` like anyone's."""
    from cwkit import evaluate as ev

    path = _svmlight_task(tmp_path, multiclass)
    specs = [AlgoSpec("pa"), AlgoSpec("arow"), AlgoSpec("cw")]
    calls = []

    def counted(X):
        calls.append(X.shape[0])
        return parsed(X)

    parsed = ev.parsed_rows
    monkeypatch.setattr(ev, "parsed_rows", counted)

    def run(vouch):
        src = SvmlightSource(path, batch_size=100)
        src.scan()
        src.parsed = vouch
        task = ev.evaluate(src, specs, noise=0.1, passes=2, seed=2)
        task.pop("seconds")
        for res in task["results"]:
            res.pop("seconds")
        return task

    checked = run(False)
    assert calls == []
    assert run(True) == checked
    assert sum(calls) == 2 * 600    # every row of both passes went the parsed way

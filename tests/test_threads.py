"""One estimator shared by threads: its updates and reads are serialised.

The compiled passes run without the GIL; before each estimator had a lock, two
threads in ``partial_fit`` corrupted the heap (L1-PA's scratch buffer) or
silently left negative variances (full covariance).  Every thread here trains
on the same batch, so any order of the calls gives the state of as many
serial calls; the threads run in a child process (a crash is a failure).
"""
import pickle

import numpy as np
import pytest
from _child import run_child

import cwkit

#: One case per shape of state: binary, multi-class, L1-PA, full covariance, mini-batch.
CASES = [("pa1", {}, 2), ("arow", {}, 3), ("l1-pa", {"beta": 3.0}, 2),
         ("l1-pa", {"beta": 3.0}, 3), ("cw", {"covariance": "full"}, 2),
         ("arow", {"covariance": "full"}, 3), ("bpa1", {"batch_size": 3}, 2),
         ("cw-stdev", {}, 2)]


@pytest.mark.slow
def test_threads_sharing_an_estimator_give_the_serial_state():
    result = run_child(f"""
        import json, threading, warnings
        import numpy as np, scipy.sparse as sp, cwkit
        warnings.simplefilter("ignore")
        out = {{}}
        for name, params, K in {CASES!r}:
            rng = np.random.default_rng(0)
            d = 60 if params.get("covariance") == "full" else 3000
            X = sp.random(40, d, density=0.2 if d == 60 else 0.01, format="csr", random_state=1)
            y = rng.integers(0, K, 40)
            classes = np.arange(K)
            n_threads, calls = 4, 30
            shared = cwkit.make(name, **params).partial_fit(X[:2], y[:2], classes=classes)
            serial = cwkit.make(name, **params).partial_fit(X[:2], y[:2], classes=classes)
            for _ in range(n_threads * calls):
                serial.partial_fit(X, y)
            errors = []

            def train():
                try:
                    for _ in range(calls):
                        shared.partial_fit(X, y)
                        shared.predict(X[:5])
                except Exception as exc:
                    errors.append(repr(exc))

            threads = [threading.Thread(target=train) for _ in range(n_threads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            same = all(np.array_equal(a, serial._model.state[k])
                       for k, a in shared._model.state.items())
            out[f"{{name}} {{params}} K={{K}}"] = {{"errors": errors, "same": same,
                                                    "t": [shared.t_, serial.t_]}}
        print(json.dumps(out))
    """, timeout=300)
    for case, outcome in result.items():
        assert outcome["errors"] == [], case
        assert outcome["t"][0] == outcome["t"][1], case
        assert outcome["same"], case


def test_the_lock_is_not_a_parameter_and_not_pickled():
    est = cwkit.make("arow").fit(np.eye(3), [0, 1, 1])
    est.predict(np.eye(3))
    assert "lock" not in " ".join(est.get_params())
    twin = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(twin.coef_, est.coef_)
    twin.partial_fit(np.eye(3), [0, 1, 1])
    import copy
    copy.deepcopy(est).partial_fit(np.eye(3), [0, 1, 1])


@pytest.mark.parametrize("method", ["fit", "partial_fit", "decision_function", "predict",
                                    "predict_proba", "score", "coef_", "pickle", "save",
                                    "learn_one", "predict_one"])
def test_entry_points_hold_the_lock(method, tmp_path):
    """While another thread holds the estimator's lock, every entry point waits."""
    import threading
    if method in ("learn_one", "predict_one"):     # (through their compiled path)
        est = cwkit.make("arow").learn_many([{"a": 1.0}, {"b": 1.0}], [0, 1], classes=[0, 1])
        est.learn_one({"a": 1.0}, 1)
        assert "_one" in est.__dict__
        args = ({"a": 1.0, "b": 2.0}, 0)[:2 if method == "learn_one" else 1]
    else:
        est = cwkit.make("arow").fit(np.eye(3), [0, 1, 1])
        args = (np.eye(3),) if method in ("decision_function", "predict",
                                          "predict_proba") else (np.eye(3), [0, 1, 1])
    lock = est._state_lock()
    done = threading.Event()
    call = {"coef_": lambda: est.coef_, "pickle": lambda: pickle.dumps(est),
            "save": lambda: cwkit.save(est, tmp_path / "m.cwk")}.get(
        method, lambda: getattr(est, method)(*args))
    with lock:
        t = threading.Thread(target=lambda: (call(), done.set()))
        t.start()
        assert not done.wait(0.2)
    assert done.wait(10)
    t.join()

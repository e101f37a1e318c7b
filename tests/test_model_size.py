"""The memory of a model is known before it is allocated; too large a model is
refused with one ModelSizeError line saying what to do."""
import numpy as np
import pytest
import scipy.sparse as sp
from _child import run_child
from conftest import last_iterate, BINARY_CASES, OTHER_CASES

import cwkit
from cwkit.models.size import LIMIT_VARIABLE, memory_limit, state_size

STRATEGIES = [("binary", {}), ("top1", {}), ("topk", {"multiclass": "topk", "k": 2}),
              ("ovr", {"multiclass": "ovr"})]


@pytest.mark.parametrize("strategy, extra", STRATEGIES, ids=[s for s, _ in STRATEGIES])
def test_state_size_is_what_the_model_allocates(strategy, extra):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 5))
    y = np.arange(12) % (2 if strategy == "binary" else 3)
    for name, params in BINARY_CASES + OTHER_CASES:
        try:
            est = last_iterate(name, **params, **extra)
            est.fit(X, y)
        except ValueError as exc:
            assert "topk" in str(exc)       # a rule without a top-k form
            continue
        held = sum(np.size(a) for a in est._model.state.values())
        assert state_size(est._spec(len(est.classes_), 5)) == held, (name, params)


def test_a_model_larger_than_the_address_space_is_refused_before_allocating():
    # 2e8 features: 3.2 GB of AROW state; the child may map at most 1 GiB more
    result = run_child("""
        import json, resource
        import numpy as np, scipy.sparse as sp, cwkit
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + 2**30, resource.RLIM_INFINITY))
        X = sp.csr_matrix((np.ones(2), [0, 2 * 10**8 - 1], [0, 1, 2]), shape=(2, 2 * 10**8))
        out = {}
        for name, params in [("arow", {}), ("pa1", {}), ("cw", {"covariance": "full"})]:
            try:
                cwkit.make(name, **params).fit(X, [0, 1])
                out[name] = "fitted"
            except cwkit.ModelSizeError as exc:
                out[name] = "ModelSizeError: " + str(exc)
            except BaseException as exc:
                out[name] = type(exc).__name__ + ": " + str(exc)
        print(json.dumps(out))
    """)
    for name, outcome in result.items():
        assert outcome.startswith("ModelSizeError: "), (name, outcome)
        assert "200000000 features and 2 classes needs" in outcome
        assert "--hash-bits" in outcome and LIMIT_VARIABLE in outcome
    assert "needs 3.0 GiB" in result["arow"]
    assert "covariance='diag'" in result["cw"]


def test_the_limit_can_be_set_and_is_checked(monkeypatch):
    X = sp.csr_matrix((np.ones(2), [0, 10**6 - 1], [0, 1, 2]), shape=(2, 10**6))
    monkeypatch.setenv(LIMIT_VARIABLE, "1e6")
    with pytest.raises(cwkit.ModelSizeError, match=r"needs 7\.6 MiB of memory and 976\.6 KiB"):
        last_iterate("pa1").fit(X, [0, 1])
    with pytest.raises(MemoryError):
        last_iterate("pa1").partial_fit(X, [0, 1])
    monkeypatch.setenv(LIMIT_VARIABLE, "inf")
    assert last_iterate("pa1").fit(X, [0, 1]).coef_.shape == (1, 10**6)
    monkeypatch.setenv(LIMIT_VARIABLE, "lots")
    with pytest.raises(ValueError, match=f"{LIMIT_VARIABLE} must be a number of bytes"):
        last_iterate("pa1").fit(X, [0, 1])
    monkeypatch.delenv(LIMIT_VARIABLE)
    assert memory_limit() > 0


def test_a_model_file_claiming_more_features_than_it_holds_allocates_nothing(tmp_path):
    import json
    est = last_iterate("arow", covariance="diag").fit(np.eye(3), [0, 1, 1])
    path = tmp_path / "m.cwk"
    cwkit.save(est, path)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes())
    meta["n_features_in_"] = 10**12
    with open(path, "wb") as f:
        np.savez(f, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
    with pytest.raises(cwkit.ModelFileError,
                       match="its state arrays hold 8 values, where AROW with 1000000000000 "):
        cwkit.load(path)


def test_a_huge_batch_size_is_refused_with_advice(monkeypatch):
    """Mini-batch PA keeps B pending rows: batch_size=1e9 is refused before allocating,
    naming the batch size as what to change."""
    monkeypatch.setenv(LIMIT_VARIABLE, "1e9")
    X = np.eye(4)
    with pytest.raises(cwkit.ModelSizeError, match="a smaller batch_size than 1000000000"):
        last_iterate("bpa1", batch_size=10**9).fit(X, [0, 1, 0, 1])

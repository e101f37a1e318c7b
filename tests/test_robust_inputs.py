"""Malformed and random inputs work or raise a clear ValueError, never crash the process.

scipy does not check the index arrays of a CSR matrix built or edited by hand
(``has_canonical_format`` can still be True); the compiled kernels index the
model state with them unchecked, so ``cwkit._rowdata.as_rows`` must.  The
cases run in a child process: a segfault is a failed test, not a dead run.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from _child import run_child

import cwkit
from cwkit._rowdata import as_rows

#: Builders of malformed sparse matrices of shape (2, 3): name -> code making `X`.
MALFORMED = {
    "index beyond n_features": "X = sp.csr_matrix((np.ones(2), [0, 10**6], [0, 1, 2]), "
                               "shape=(2, 3))",
    "negative index": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 3)); "
                      "X.indices[1] = -5",
    "indptr not monotone": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 3)); "
                           "X.indptr = np.array([0, 2, 2], dtype=X.indptr.dtype); "
                           "X.indptr[1] = 5",
    "indptr beyond nnz": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 3)); "
                         "X.indptr[2] = 10**6",
    "indptr negative": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 3)); "
                       "X.indptr[2] = -1",
    "indptr not from 0": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 3)); "
                         "X.indptr[0] = 1",
    "indptr too short": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 3)); "
                        "X.indptr = X.indptr[:2]",
    "indptr too long": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 3)); "
                       "X.indptr = np.array([0, 1, 2, 2], dtype=X.indptr.dtype)",
    "int64 index beyond int32": "X = sp.csr_matrix((np.ones(2), np.array([0, 2**32 + 1]), "
                                "np.array([0, 1, 2])), shape=(2, 3)); "
                                "X.indices = np.array([0, 2**32 + 1], dtype=np.int64)",
    "data shorter than indices": "X = sp.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), "
                                 "shape=(2, 3)); X.data = X.data[:1]",
    "csc index beyond n_rows": "X = sp.csc_matrix((np.ones(2), [0, 1], [0, 1, 2, 2]), "
                               "shape=(2, 3)); X.indices[1] = 10**6",
    "coo column beyond n_features": "X = sp.coo_matrix((np.ones(2), ([0, 1], [0, 1])), "
                                    "shape=(2, 3)); X.col[1] = 10**6",
}

#: Estimators whose kernels read the indices in different ways.
ESTIMATORS = [("pa1", {}), ("arow", {}), ("arow", {"covariance": "full"}), ("l1-pa", {}),
              ("bpa1", {"batch_size": 2}), ("sop", {})]


def test_malformed_csr_raises_valueerror_in_every_entry_point():
    result = run_child(f"""
        import json
        import numpy as np, scipy.sparse as sp, cwkit
        cases = {MALFORMED!r}
        out = {{}}
        for name, params in {ESTIMATORS!r}:
            fitted = cwkit.make(name, **params).fit(np.eye(3)[:2] + 0.1, [0, 1])
            for case, code in cases.items():
                for call in ("fit", "partial_fit", "decision_function"):
                    ns = {{"np": np, "sp": sp}}
                    exec(code, ns)
                    X = ns["X"]
                    est = fitted if call == "decision_function" else cwkit.make(name, **params)
                    args = (X,) if call == "decision_function" else (X, [0, 1])
                    try:
                        getattr(est, call)(*args)
                        out[f"{{name}}{{params}} {{call}} {{case}}"] = "no error"
                    except ValueError as exc:
                        out[f"{{name}}{{params}} {{call}} {{case}}"] = "ValueError: " + str(exc)
        print(json.dumps(out))
    """)
    assert len(result) == len(ESTIMATORS) * len(MALFORMED) * 3
    for key, outcome in result.items():
        assert outcome.startswith("ValueError: X"), (key, outcome)
        assert "\n" not in outcome and "Traceback" not in outcome


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_csr_message_says_what_is_wrong(case):
    ns = {"np": np, "sp": sp}
    exec(MALFORMED[case], ns)
    with pytest.raises(ValueError, match=r"^X is a malformed sparse matrix: "):
        as_rows(ns["X"])


def test_rows_edited_behind_scipys_cached_canonical_flag_are_summed():
    """Duplicate or unsorted indices written into a matrix whose has_canonical_format
    scipy has cached as True: the rows are summed as if canonical, never trusted."""
    result = run_child("""
        import json, warnings
        import numpy as np, scipy.sparse as sp, cwkit
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(0)
        X = sp.csr_matrix(rng.normal(size=(30, 8)) * (rng.random((30, 8)) < 0.6))
        assert X.has_canonical_format
        for i in range(30):
            a, b = X.indptr[i], X.indptr[i + 1]
            if b - a >= 2:
                if i % 2:
                    X.indices[a + 1] = X.indices[a]
                else:
                    X.indices[a:b] = X.indices[a:b][::-1].copy()
        assert X.has_canonical_format
        canonical = sp.csr_matrix((X.data.copy(), X.indices.copy(), X.indptr.copy()),
                                  shape=X.shape)
        canonical.sum_duplicates()
        y = rng.integers(0, 3, 30)
        out = {}
        for entry in cwkit.algorithms():
            for mc in ("top1", "ovr"):
                a = cwkit.make(entry["name"], multiclass=mc, shuffle=False).fit(X, y)
                b = cwkit.make(entry["name"], multiclass=mc, shuffle=False).fit(canonical, y)
                out[entry["name"] + " " + mc] = bool(np.array_equal(a.coef_, b.coef_))
        print(json.dumps(out))
    """)
    assert result and all(result.values()), result


def test_single_row_partial_fit_on_non_canonical_rows_equals_canonical():
    """One row per call, out of order (as ``diags(1 / norms) @ X`` makes them) or with
    repeated indices: the state after every call equals that of the canonical rows, and
    the caller's matrix is left as it was."""
    rng = np.random.default_rng(3)
    X = sp.random(40, 50, density=0.2, format="csr", random_state=4)
    X.data = rng.normal(size=X.nnz)
    y = rng.integers(0, 2, 40) * 2 - 1
    unsorted = sp.csr_matrix(sp.diags(rng.uniform(0.5, 2, 40)) @ X)
    rows = [unsorted[i] for i in range(40)]
    rows[7] = sp.csr_matrix((np.array([1.0, 2.0, -0.5]), np.array([9, 3, 9]), [0, 3]),
                            shape=(1, 50))          # a repeated index: summed
    assert any(np.any(np.diff(r.indices) < 0) for r in rows)
    saved = [(r.data.copy(), r.indices.copy()) for r in rows]
    canonical = [r.copy() for r in rows]
    for r in canonical:
        r.sum_duplicates()
    for name in ("pa1", "arow", "cw", "adagrad"):
        a, b = cwkit.make(name), cwkit.make(name)
        for i in range(40):
            a.partial_fit(rows[i], y[i:i + 1], classes=[-1, 1])
            b.partial_fit(canonical[i], y[i:i + 1], classes=[-1, 1])
            assert np.array_equal(a.coef_, b.coef_), (name, i)
            assert np.array_equal(a.decision_function(rows[i]), b.decision_function(canonical[i]))
    assert all(np.array_equal(r.data, d) and np.array_equal(r.indices, j)
               for r, (d, j) in zip(rows, saved))


def test_first_partial_fit_whose_pass_checks_the_rows():
    """The first partial_fit of a first-order or diagonal rule on a CSR matrix leaves
    the checks of its rows to the pass (no walk of their own): a row that is not valid
    far into the matrix, after rows learnt, leaves the estimator as it was and raises
    what the checks before the pass raise; rows out of order or with a repeated index
    are learnt as the canonical rows (summed), bit for bit; valid rows are never
    checked apart from the pass."""
    result = run_child("""
        import json
        import numpy as np, scipy.sparse as sp, cwkit, cwkit.base
        rng = np.random.default_rng(5)
        X = sp.random(300, 40, density=0.2, format="csr", random_state=6)
        y = rng.integers(0, 2, 300)
        out = {}

        def edited(case):
            Z = X.copy()
            a = Z.indptr[250]
            if case == "nan":
                Z.data[a + 1] = np.nan
            elif case == "inf":
                Z.data[a] = -np.inf
            elif case == "index beyond":
                Z.indices[a + 1] = 10**6
            elif case == "negative index":
                Z.indices[a] = -3
            elif case == "unsorted":
                Z.indices[a:a + 2] = Z.indices[a:a + 2][::-1].copy()
            elif case == "repeated":
                Z.indices[a + 1] = Z.indices[a]
            return Z

        for name in ("pa1", "arow", "cw"):
            params = {} if name == "pa1" else {"covariance": "diag"}
            for case in ("nan", "inf", "index beyond", "negative index", "unsorted",
                         "repeated"):
                Z = edited(case)
                est, fresh = cwkit.make(name, **params), cwkit.make(name, **params)
                try:
                    est.partial_fit(Z, y, classes=[0, 1])
                    canonical = Z.copy()
                    canonical.has_canonical_format = False
                    canonical.sum_duplicates()
                    same = np.array_equal(
                        est.coef_, fresh.partial_fit(canonical, y, classes=[0, 1]).coef_)
                    out[name + " " + case] = "same" if same else "differs"
                except ValueError as exc:
                    unchanged = set(vars(est)) - {"_lock"} == set(vars(fresh))
                    out[name + " " + case] = str(exc) + (" (unchanged)" if unchanged else "")
            real = cwkit.base.as_rows
            cwkit.base.as_rows = None       # valid rows: the pass checks them alone
            est = cwkit.make(name, **params).partial_fit(X, y, classes=[0, 1])
            cwkit.base.as_rows = real
            same = np.array_equal(est.coef_, cwkit.make(name, **params).fit(X, y).coef_)
            out[name + " valid"] = "same" if same else "differs"
        print(json.dumps(out))
    """)
    for name in ("pa1", "arow", "cw"):
        for case in ("nan", "inf"):
            assert result[f"{name} {case}"] == ("X contains NaN, inf or a value too large for "
                                                "float64 (row 250) (unchanged)")
        assert result[f"{name} index beyond"].startswith(
            "X is a malformed sparse matrix: the indices hold 1000000, outside [0, 40)")
        assert result[f"{name} negative index"].startswith(
            "X is a malformed sparse matrix: the indices hold -3, outside [0, 40)")
        assert result[f"{name} index beyond"].endswith("(unchanged)")
        for case in ("unsorted", "repeated", "valid"):
            assert result[f"{name} {case}"] == "same", (name, case)


def test_wellformed_csr_with_spare_capacity_and_int64_indices_is_accepted():
    X = sp.csr_matrix(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]))
    X.indices = X.indices.astype(np.int64)
    X.indptr = X.indptr.astype(np.int64)
    rows = as_rows(X)
    np.testing.assert_array_equal(rows.X.toarray(), [[0, 2, 0], [1, 0, 3]])
    # scipy allows arrays longer than the stored entries: the rest is ignored
    X.indices = np.r_[X.indices, 10**6]
    X.data = np.r_[X.data, np.nan]
    rows = as_rows(X)
    np.testing.assert_array_equal(rows.X.toarray(), [[0, 2, 0], [1, 0, 3]])
    assert rows.X.nnz == len(rows.X.indices) == 3
    empty = sp.csr_matrix((2, 3))
    assert as_rows(empty).n_rows == 2


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_random_inputs_work_or_raise_a_clear_valueerror(seed):
    """A small campaign of ``input_fuzz`` (``python tests/fuzz_inputs.py`` runs a
    larger one): random CSR structure, dtypes, formats, index bounds, non-canonical
    rows, NaN / inf, empty rows and columns, huge and tiny values, threads."""
    result = run_child(f"""
        import json, warnings
        warnings.simplefilter("ignore")
        from input_fuzz import fuzz
        print(json.dumps(fuzz(400, seed={seed})))
    """)
    assert result["cases"] == 400
    assert result["failures"] == []


def test_compiled_canonical_check_equals_the_numpy_one():
    """``_core._csr_increasing`` (int32 indices) against the plain definition, on rows
    sorted, unsorted, with repeats, empty, across int32 and int64 indptr; with a bound
    n_cols, 2 exactly when the rows are canonical and every index in [0, n_cols); with
    chunks of the indices shorter than the rows, as long and longer (a row's start at a
    chunk's start, inside one, rows spanning several)."""
    from cwkit import _core
    rng = np.random.default_rng(5)
    for _ in range(600):
        lengths = rng.integers(0, 5, rng.integers(1, 12))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        indices = rng.integers(0, 6, indptr[-1]).astype(np.int32)
        if rng.random() < 0.5:              # make most rows sorted and unique
            for a, b in zip(indptr[:-1], indptr[1:]):
                indices[a:b] = np.sort(rng.choice(20, b - a, replace=False) - 2)
        expected = all(np.all(np.diff(indices[a:b]) > 0) for a, b in zip(indptr[:-1], indptr[1:]))
        n_cols = int(rng.integers(0, 20))
        within = bool(np.all((indices >= 0) & (indices < n_cols)))
        for ptr in (indptr.astype(np.int32), indptr.astype(np.int64)):
            for chunk in (1, 2, 3, 5, 8192):
                assert _core._csr_increasing(indices, ptr, chunk=chunk) == expected
                assert (_core._csr_increasing(indices, ptr, n_cols, chunk=chunk)
                        == expected * (1 + within))


def test_compiled_finite_check_equals_the_numpy_one():
    """``_core._all_finite`` against ``np.isfinite(...).all()``: NaN, +-inf and the
    extreme finite values at every position of short and long arrays (the
    vectorised loop and its tail)."""
    from cwkit import _core
    specials = [np.nan, -np.nan, np.inf, -np.inf, np.finfo(float).max, -np.finfo(float).max,
                np.finfo(float).tiny, 5e-324, -0.0, 0.0]
    assert _core._all_finite(np.empty(0))
    for n in (1, 2, 3, 7, 8, 9, 33):
        for pos in range(n):
            for v in specials:
                a = np.linspace(-1e300, 1e300, n)
                a[pos] = v
                assert _core._all_finite(a) == bool(np.isfinite(a).all()), (n, pos, v)
    a = np.ones(1_000_003)
    a[-1] = np.nan
    assert not _core._all_finite(a)
    assert not _core._all_finite(a[::-1].copy())


@pytest.mark.parametrize("where", ["helper", "caller", "spare", "none"])
def test_the_finiteness_check_on_two_cores(monkeypatch, where):
    """A CSR matrix of PARALLEL_CHECK_MIN values or more has the first part of its values
    checked on a helper thread while its indices are checked, the rest after: a NaN in
    either part is reported with its row, one in the spare capacity after the stored
    entries is not (those values are not the matrix's), and a matrix made canonical
    (another array of values) is checked again as it is."""
    from cwkit import _rowdata
    monkeypatch.setattr(_rowdata, "PARALLEL_CHECK_MIN", 8)
    monkeypatch.setattr(_rowdata, "usable_cores", lambda: 2)
    started = []
    monkeypatch.setattr(_rowdata, "try_start", lambda t: bool(started.append(t) or t.start()
                                                              or True))
    n_rows, per_row = 10, 4
    indptr = np.arange(0, n_rows * per_row + 1, per_row)
    indices = np.tile(np.arange(0, 2 * per_row, 2, dtype=np.int32), n_rows)
    data = np.ones(n_rows * per_row + (3 if where == "spare" else 0))
    if where == "spare":
        indices = np.concatenate([indices, np.zeros(3, np.int32)])
        data[-2] = np.nan
    elif where != "none":
        pos = 5 if where == "helper" else len(data) - 2      # the helper's share is 70%
        data[pos] = np.nan
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, 8))
    if where in ("helper", "caller"):
        row = 5 // per_row if where == "helper" else (len(data) - 2) // per_row
        with pytest.raises(ValueError, match=rf"X contains NaN, inf .*\(row {row}\)"):
            as_rows(X)
    else:
        assert as_rows(X).n_rows == n_rows
    assert len(started) == 1
    # unsorted rows: the view holds sorted copies, whose values are checked again
    Y = sp.csr_matrix((np.r_[1.0, np.inf, np.ones(8)], np.r_[3, 1, np.arange(8)].astype(np.int32),
                       [0, 2, 10]), shape=(2, 8))
    with pytest.raises(ValueError, match=r"\(row 0\)"):
        as_rows(Y)


@pytest.mark.parametrize("failure", ["no thread", "no answer"])
def test_the_finiteness_check_without_its_helper(monkeypatch, failure):
    """When the helper thread cannot start, or ends without its answer, its share of the
    values is checked by the caller: a NaN there is still reported, with its row."""
    from cwkit import _rowdata, _threads
    monkeypatch.setattr(_rowdata, "PARALLEL_CHECK_MIN", 8)
    monkeypatch.setattr(_rowdata, "usable_cores", lambda: 2)
    if failure == "no thread":
        def start(thread):
            raise RuntimeError("can't start new thread")
        monkeypatch.setattr(_threads, "start", start)
    else:
        monkeypatch.setattr(_rowdata._FiniteCheck, "_run", lambda self, split: None)
    data = np.ones(40)
    data[5] = np.nan                    # in the helper's 70%
    X = sp.csr_matrix((data, np.tile(np.arange(0, 8, 2, dtype=np.int32), 10),
                       np.arange(0, 41, 4)), shape=(10, 8))
    with pytest.raises(ValueError, match=r"X contains NaN, inf .*\(row 1\)"):
        as_rows(X)
    data[5] = 1.0
    assert as_rows(X).n_rows == 10

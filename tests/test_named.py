"""Named features: the hash against independent references, dict rows against CSR rows.

References: scikit-learn's MurmurHash3 (an independent implementation of the
same public hash), Vowpal Wabbit's feature indices (known answers from its
Python package, 9.11), and CSR rows built in plain Python from the reference
hash, fed to ``partial_fit``.
"""
import copy
import random

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils import murmurhash3_32 as sk_murmur

import cwkit
from cwkit.features import FeatureHasher, Vocabulary, murmurhash3_32, name_hash

BITS = 8


def ref_hash(name, seed=0):
    """Vowpal Wabbit's name hash, written from its hashstring.h with scikit-learn's
    MurmurHash3."""
    name = str(name)
    if all("0" <= c <= "9" for c in name):      # the empty name too: the seed
        return (int(name or "0") + seed) % 2**64
    return sk_murmur(name.encode(), seed=seed % 2**32, positive=True)


def ref_rows(rows, bits=BITS, signed=False):
    """The CSR matrix of named rows: columns by `ref_hash`, sums in row order."""
    data, indices, indptr = [], [], [0]
    for row in rows:
        items = row.items() if isinstance(row, dict) else ((k, 1.0) for k in row)
        cols = {}
        for name, value in items:
            j = ref_hash(name) & (2**bits - 1)
            v = float(value)
            if signed and sk_murmur(str(name).encode(), seed=0, positive=True) >> 31:
                v = -v
            cols[j] = cols[j] + v if j in cols else v
        for j in sorted(cols):
            indices.append(j)
            data.append(cols[j])
        indptr.append(len(indices))
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), 2**bits))


def named_stream(n, seed=0, n_classes=2):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(300)] + [str(i) for i in range(40)] + ["é", "日本", ""]
    rows = []
    for _ in range(n):
        names = rng.sample(vocab, rng.randint(1, 12))
        if rng.random() < 0.2:
            rows.append(names)
        else:
            rows.append({k: rng.choice([1, 0.5, -2.25, rng.random(), True]) for k in names})
    y = [rng.randrange(n_classes) for _ in range(n)]
    return rows, y


def test_murmurhash3_equals_an_independent_implementation():
    rng = random.Random(1)
    for _ in range(500):
        s = "".join(rng.choice("ab€😀z09 ") for _ in range(rng.randint(0, 17)))
        seed = rng.randrange(2**32)
        assert murmurhash3_32(s, seed) == sk_murmur(s.encode(), seed=seed, positive=True)


def test_name_hash_gives_vowpal_wabbits_feature_indices():
    # vw -b 18 --noconstant, pyvw's Example.feature on "1 | hello 42 a:2",
    # "1 |ns hello 42" and "1 |7 hello 42"
    m = 2**18 - 1
    assert [name_hash(n) & m for n in ("hello", "42", "a")] == [260679, 42, 92594]
    ns = name_hash("ns")
    assert [name_hash(n, ns) & m for n in ("hello", "42")] == [104835, 120386]
    assert [name_hash(n, 7) & m for n in ("hello", "42")] == [15211, 49]
    for name in ("x", "12", "0", "007", "a1", "", 5):
        assert name_hash(name, 99) == ref_hash(name, 99)


@pytest.mark.parametrize("signed", [False, True])
def test_hasher_equals_the_reference_rows(signed):
    rows, _ = named_stream(300, seed=2)
    X = FeatureHasher(BITS, signed).transform(rows)
    R = ref_rows(rows, signed=signed)
    assert X.shape == R.shape and X.has_canonical_format
    assert (X.indptr == R.indptr).all() and (X.indices == R.indices).all()
    assert (X.data == R.data).all()


def _fed(name, rows, y, classes, how):
    clf = cwkit.make(name).use_features(hash_bits=BITS)
    if how == "many":
        return clf.learn_many(rows, y, classes=classes)
    clf.learn_many(rows[:1], y[:1], classes=classes)
    for x, label in zip(rows[1:], y[1:]):
        clf.learn_one(x, label)
    return clf


def _state(clf):
    return {k: np.array(v) for k, v in clf._model.state.items()}


@pytest.mark.parametrize("name", [a["name"] for a in cwkit.algorithms()])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_dict_rows_learn_as_the_hashed_csr_rows_bit_for_bit(name, n_classes):
    rows, y = named_stream(60, seed=3, n_classes=n_classes)
    classes = list(range(n_classes))
    R = ref_rows(rows)
    ref = cwkit.make(name).partial_fit(R[:1], y[:1], classes=classes)
    for i in range(1, len(y)):
        ref.partial_fit(R[i:i + 1], y[i:i + 1])
    batch = cwkit.make(name).partial_fit(R, y, classes=classes)
    one, many = _fed(name, rows, y, classes, "one"), _fed(name, rows, y, classes, "many")
    for got, want in ((one, ref), (many, batch)):
        assert got.t_ == want.t_
        for key, value in _state(want).items():
            np.testing.assert_array_equal(_state(got)[key], value, err_msg=key)
    np.testing.assert_array_equal(many.predict_many(rows), batch.predict(R))
    np.testing.assert_array_equal(many.predict_proba_many(rows), batch.predict_proba(R))
    for i in range(0, 60, 6):       # scored over the row's own features: the same
        assert many.predict_one(rows[i]) == batch.predict(R[i])[0]
        proba = many.predict_proba_one(rows[i])
        assert list(proba) == classes
        assert list(proba.values()) == batch.predict_proba(R[i]).ravel().tolist()


#: learn_one's paths: the whole round compiled (first-order and diagonal models), the
#: row hashed in one compiled call then partial_fit's single-row pass, the general path.
ROUND, ROW, GENERAL = "round", "row", "general"


VOCAB = "vocabulary"


@pytest.mark.parametrize("name, params, path, n_classes", [
    ("pa1", {}, ROUND, 2), ("pa", {}, ROUND, 2), ("pa1", {"average": True}, VOCAB, 2),
    ("arow", {"covariance": "diag"}, VOCAB, 2), ("pa", {"multiclass": "ovr"}, VOCAB, 3),
    ("arow", {"average": True, "covariance": "diag"}, VOCAB, 3),
    ("perceptron", {"class_weight": "balanced"}, VOCAB + GENERAL, 3),
    ("arow", {"average": True, "covariance": "diag"}, ROUND, 2),
    ("cw", {"covariance": "diag"}, ROUND, 2), ("cw", {"covariance": "full"}, ROW, 2),
    ("adagrad", {}, ROW, 2),
    ("perceptron", {"class_weight": {0: 2.0, 1: 1.0}}, GENERAL, 2),
    ("pa1", {"average": True}, ROUND, 3), ("perceptron", {}, ROUND, 4),
    ("pa2", {"multiclass": "ovr", "average": True}, ROUND, 3),
    ("arow", {"average": True, "covariance": "diag"}, ROUND, 3),
    ("arow", {"covariance": "diag", "sigma_update": "sum"}, ROUND, 3),
    ("cw", {"covariance": "diag", "multiclass": "ovr"}, ROUND, 3),
    ("arow", {"covariance": "full"}, GENERAL, 3), ("pa", {"multiclass": "topk"}, GENERAL, 3)])
def test_learn_one_is_partial_fit_on_the_hashed_row_after_every_round(
        name, params, path, n_classes, monkeypatch, tmp_path):
    """learn_one learns the row as partial_fit learns its CSR row, each of its paths:
    state, counters and calibration window equal after every round, signed hashes,
    lists of names and repeated columns included, or an exact vocabulary that grows
    (the CSR rows then of a vocabulary of their own, as wide as it has grown), saved
    and loaded mid-stream; predict_one and predict_proba_one as predict and
    predict_proba on the row."""
    calls, general = [], []
    named_one = cwkit._core.named_one
    monkeypatch.setattr(cwkit._core, "named_one",
                        lambda *a: calls.append(1) or named_one(*a))
    rows, y = named_stream(40, seed=7, n_classes=n_classes)
    classes = list(range(n_classes))
    one = cwkit.make(name, **params)
    if path.startswith(VOCAB):
        vocab = Vocabulary()
        R = [None] * len(rows)     # (the rows of a vocabulary grown as they come)
        one.use_features(VOCAB)
    else:
        R = ref_rows(rows, bits=5, signed=True)
        one.use_features(hash_bits=5, signed=True)
    ref = cwkit.make(name, **params)
    learn_named = type(one)._learn_named
    monkeypatch.setattr(type(one), "_learn_named",
                        lambda *a: general.append(1) or learn_named(*a))
    for i, (x, label) in enumerate(zip(rows, y)):
        if i == 20:     # (a model file: the path rebuilt, the growth's room anew)
            cwkit.save(one, tmp_path / "m.cwk")
            one = cwkit.load(tmp_path / "m.cwk")
        if path.startswith(VOCAB):
            R[i] = vocab.rows([x], grow=True).X.copy()
        one.learn_one(x, label, classes=classes)
        ref.partial_fit(R[i], y[i:i + 1], classes=classes)
        _assert_same(one, ref)
        if i % 8 == 7:
            assert one.predict_one(rows[i]) == ref.predict(R[i])[0]
            assert list(one.predict_proba_one(rows[i]).values()) == \
                ref.predict_proba(R[i]).ravel().tolist()
    if path.startswith(VOCAB):
        assert one.feature_map_.names_ == vocab.names_
    assert len(calls) == (len(rows) - 1 if path == ROW else 0)
    # (the first row fits the model, later rows take the compiled round; a
    # vocabulary's growth past its room, and the first after loading, the general path)
    if path == VOCAB:
        assert 1 < len(general) < 9
    else:
        assert len(general) == (1 if path in (ROUND, ROW) else len(rows))
    # (with class weights the compiled path serves predict_one, not learn_one)
    assert ("_one" in one.__dict__) == (path != ROW and "topk" not in params.values()
                                        and "full" not in params.values())


@pytest.mark.parametrize("n_classes, name, params, names", [
    (3, "pa", {}, VOCAB), (7, "arow", {"covariance": "diag", "multiclass": "ovr"}, VOCAB),
    (8, "pa1", {"multiclass": "ovr"}, "hash"), (9, "cw", {"covariance": "diag"}, "hash"),
    (16, "perceptron", {"average": True}, VOCAB), (17, "pa2", {}, "hash"),
    (127, "arow", {"covariance": "diag"}, "hash"), (128, "pa", {}, "hash"),
    (129, "pa1", {"multiclass": "ovr"}, VOCAB), (300, "pa", {}, "hash")])
def test_predict_proba_one_of_k_classes_is_predict_proba_bit_for_bit(
        n_classes, name, params, names, monkeypatch):
    """predict_proba_one of a multi-class model is compiled (the general path not
    taken once learn_one's is) and gives predict_proba's row of the row's CSR matrix
    bit for bit (predict_proba_many its matrix's): scipy's log_softmax, then exp,
    with numpy's sum of the K values (pairwise: 8 running sums from 8 classes on,
    halves beyond 128), over the first rounds (each fitting the slope anew) and after
    60, with rows and slopes scaled by 1e-3 to 1e3."""
    rows, y = named_stream(60, seed=n_classes, n_classes=n_classes)
    classes = list(range(n_classes))
    one = cwkit.make(name, **params)
    if names == VOCAB:
        one.use_features(VOCAB)
    else:
        one.use_features(hash_bits=BITS)
    general = []
    proba_one = type(one)._predict_proba_one
    monkeypatch.setattr(type(one), "_predict_proba_one",
                        lambda *a: general.append(1) or proba_one(*a))

    def check(x):
        proba = one.predict_proba_one(x)
        X = one.feature_map_.transform([x]) if names == VOCAB else ref_rows([x])
        assert list(proba) == classes
        assert list(proba.values()) == one.predict_proba(X).ravel().tolist()

    rng = random.Random(n_classes)
    for i, (x, label) in enumerate(zip(rows, y)):
        one.learn_one(x, label, classes=classes)
        if i < 3:
            check(rows[i + 1])
    general.clear()
    scaled = []
    for x in rows[:20]:
        if isinstance(x, dict):
            x = {k: float(v) * 10.0 ** rng.uniform(-3, 3) for k, v in x.items()}
        scaled.append(x)
        check(x)
        one._calibration._slopes = np.full(n_classes, 10.0 ** rng.uniform(-3, 3))
        check(x)
    assert general == []
    X = one.feature_map_.transform(scaled) if names == VOCAB else ref_rows(scaled)
    np.testing.assert_array_equal(one.predict_proba_many(scaled), one.predict_proba(X))


def _assert_same(one, ref):
    """The same state, counters and calibration window, bit for bit."""
    for attr in ("t_", "mistakes_", "n_updates_", "last_mistakes_", "last_n_updates_"):
        assert getattr(one, attr) == getattr(ref, attr), attr
    for key, value in _state(ref).items():
        np.testing.assert_array_equal(_state(one)[key], value, err_msg=key)
    for got, want in zip(one._calibration.rounds(), ref._calibration.rounds()):
        np.testing.assert_array_equal(got, want)


def test_the_compiled_round_follows_whatever_else_changes_the_estimator():
    """learn_one's compiled round keeps pointers into the model, and skips its checks
    while the dicts it read keep their versions: the calibration's slopes cached by
    predict_proba_one, new state arrays (alone, or in a new state dict), pickling,
    set_params, a wider matrix, a refit and a copy each leave learn_one as
    partial_fit on the hashed rows (state compared after each), and predict_one as
    predict."""
    import pickle
    rows, y = named_stream(80, seed=11)
    R = ref_rows(rows, bits=5)
    one = cwkit.make("pa1", average=True).use_features(hash_bits=5)
    ref = cwkit.make("pa1", average=True)

    def learn(i, j):
        for k in range(i, j):
            one.learn_one(rows[k], y[k], classes=[0, 1])
            ref.partial_fit(R[k], y[k:k + 1], classes=[0, 1])

    def both(i, j):
        learn(i, j)
        _assert_same(one, ref)
        for k in range(i, j):
            assert one.predict_one(rows[k]) == ref.predict(R[k])[0]
            assert list(one.predict_proba_one(rows[k]).values()) == \
                ref.predict_proba(R[k]).ravel().tolist()

    both(0, 5)
    both(5, 10)     # (nothing between but the calibration's slopes)
    learn(10, 11)
    for est in (one, ref):      # the arrays alone, then the state dict alone, replaced
        est._model.state.update({k: v.copy() for k, v in est._model.state.items()})
    both(11, 12)
    learn(12, 13)
    for est in (one, ref):
        est._model.state = {k: v.copy() for k, v in est._model.state.items()}
    both(13, 14)
    copy, ref_copy = pickle.loads(pickle.dumps(one)), pickle.loads(pickle.dumps(ref))
    one.set_params(fit_intercept=False)
    ref.set_params(fit_intercept=False)
    for est in (one, ref):      # the state's arrays replaced (the path holds their addresses)
        est._model.state.update({k: v.copy() for k, v in est._model.state.items()})
    both(14, 20)
    wide = sp.hstack([R[20:30], sp.random(10, 3, density=0.5, random_state=0)]).tocsr()
    one.partial_fit(wide, y[20:30])     # the model grows: named rows take the general path
    ref.partial_fit(wide, y[20:30])
    both(30, 40)
    one.fit(R[:40], y[:40])
    ref.fit(R[:40], y[:40])
    both(40, 55)
    one, ref = copy, ref_copy
    both(55, 80)


def test_a_name_alone_and_true_mean_one_and_ints_are_their_text():
    h = FeatureHasher(BITS)
    a = h.transform([["x", "y", 3]])
    b = h.transform([{"x": True, "y": 1.0, "3": 1}])
    c = h.transform([{"x", "y", "3"}])
    assert (a != b).nnz == 0 and (a != c).nnz == 0
    assert a.indices.tolist() == sorted({ref_hash("x") % 256, ref_hash("y") % 256, 3})


@pytest.mark.parametrize("row, message", [
    ({"a": 1.0, "b": "2"}, r"feature 'b' has the value '2': expected a real number"),
    ({"a": float("nan")}, r"feature 'a' has the value nan: expected a finite number"),
    ({"a": float("inf")}, r"expected a finite number"),
    ({"a": None}, r"expected a real number"),
    ({"a": 1j}, r"expected a real number"),
    ({1.5: 1.0}, r"feature name 1.5 is a float: expected a str"),
    ("abc", r"is of type str: expected a dict"),
    (7, r"is of type int: expected a dict"),
])
def test_bad_rows_are_refused_naming_the_row_and_nothing_is_learnt(row, message):
    rows, y = named_stream(20, seed=4)
    for features in ("hash", "vocabulary"):
        clf = cwkit.make("arow").use_features(features).learn_many(rows, y, classes=[0, 1])
        before = _state(clf), clf.t_, clf.n_features_in_
        vocab = list(getattr(clf.feature_map_, "names_", []))
        with pytest.raises((TypeError, ValueError), match=message) as info:
            clf.learn_one(row, 1)
        assert str(info.value).startswith(("x: ", "x is "))
        with pytest.raises((TypeError, ValueError), match=message) as info:
            clf.learn_many([{"new": 1.0}, {"newer": 2.0}, row], [0, 1, 0])
        assert str(info.value).startswith(("row 2: ", "row 2 is "))
        after = _state(clf)
        assert clf.t_ == before[1] and clf.n_features_in_ == before[2]
        assert all((after[k] == v).all() for k, v in before[0].items())
        assert list(getattr(clf.feature_map_, "names_", [])) == vocab


def test_hashed_values_summing_beyond_a_double_are_refused_naming_the_row():
    # "0" and "256" share column 0 of 2**8 (a name of digits is its number)
    rows = [{"a": 1.0}, {"0": 1e308, "256": 1e308}]
    for x in (rows[1], {"0": 1e308, "256": 1e308, "b": 1}):     # (float values, or not)
        with pytest.raises(ValueError, match="row 1: the values of features sharing a "
                                             "column sum beyond the range of a double"):
            FeatureHasher(BITS).transform([rows[0], x])
    clf = cwkit.make("pa").use_features(hash_bits=BITS).learn_one(rows[0], True)
    with pytest.raises(ValueError, match="^x: the values"):
        clf.learn_one(rows[1], True)
    assert clf.t_ == 1


def test_a_rejected_label_learns_nothing_not_even_new_names():
    rows, y = named_stream(20, seed=5)
    clf = cwkit.make("pa").use_features("vocabulary").learn_many(rows, y, classes=[0, 1])
    names = clf.feature_map_.names_
    with pytest.raises(ValueError):     # (label 7 is not one of the classes)
        clf.learn_one({"brand new": 1.0}, 7)
    assert clf.feature_map_.names_ == names


def test_the_first_call_needs_the_classes_unless_labels_are_bools():
    with pytest.raises(ValueError, match="pass classes="):
        cwkit.make("pa").learn_one({"a": 1}, 1)
    clf = cwkit.make("pa").learn_one({"a": 1}, True)
    assert clf.classes_.tolist() == [False, True]


def test_named_rows_and_numbered_columns_do_not_mix():
    clf = cwkit.make("pa").fit(np.eye(4), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="numbered columns"):
        clf.learn_one({"a": 1}, 0)
    named = cwkit.make("pa").learn_one({"a": 1}, True)
    with pytest.raises(ValueError, match="cannot be re-read"):
        named.use_features(hash_bits=10)


def test_vocabulary_columns_are_exact_and_unseen_names_weigh_nothing():
    v = Vocabulary()
    X = v.rows([{"b": 1.0, "a": 2.0}, ["c", "a"]], grow=True).X
    assert v.names_ == ["b", "a", "c"]
    assert X.toarray().tolist() == [[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]]
    assert v.transform([{"zzz": 5.0, "c": 2}]).toarray().tolist() == [[0.0, 0.0, 2.0]]
    assert v.names_ == ["b", "a", "c"]


def _copied(row):
    """The dict `row` with names that are equal str of other objects."""
    return {"".join(list(k)): v for k, v in row.items()}


def test_the_vocabulary_keeps_a_dicts_columns_through_growth_and_rollbacks():
    # its compiled table (resized as it grows, a rejected call's names taken out)
    # against a dict, for names that are its own objects or equal copies
    rng = random.Random(11)
    pool = [f"n{i}" for i in range(3000)] + ["é", "日本語", "\U0001f600x", ""]
    v, ref = Vocabulary(), {}
    for step in range(80):
        row = {rng.choice(pool): 1.0 for _ in range(rng.randint(1, 150))}
        row = _copied(row) if step % 2 else row
        before = len(ref)
        X = v.rows([row], grow=True).X
        for name in row:
            ref.setdefault(name, len(ref))
        assert X.indices.tolist() == sorted(ref[name] for name in row)
        if step % 5 == 4:       # a rejected call's new names taken out again
            v.truncate(before)
            ref = dict(list(ref.items())[:before])
        assert v.names_ == list(ref)
    size = len(ref)     # (the table resized, then the new names taken out again)
    v.rows([{f"new{i}": 1.0 for i in range(3 * size)}], grow=True)
    v.truncate(size)
    every = {name: 1.0 for name in pool}
    assert v.names_ == list(ref)
    assert v.transform([_copied(every)]).indices.tolist() == sorted(ref.values())
    assert copy.deepcopy(v).names_ == v.names_


def test_learn_one_on_a_vocabulary_takes_equal_names_of_other_objects_as_the_same():
    rows, y = named_stream(300, seed=12)
    rows = [{k: float(v) for k, v in row.items()} for row in rows if isinstance(row, dict)]
    a, b = (cwkit.make("pa1").use_features("vocabulary") for _ in range(2))
    for i, (x, label) in enumerate(zip(rows, y)):
        a.learn_one(x, label, classes=[0, 1])
        b.learn_one(_copied(x) if i % 2 else x, label, classes=[0, 1])
        if i % 7 == 0:
            assert a.predict_one(x) == b.predict_one(_copied(x))
    assert a.feature_map_.names_ == b.feature_map_.names_
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("features", ["hash", "vocabulary"])
def test_saved_and_loaded_models_keep_their_feature_map(tmp_path, features):
    rows, y = named_stream(40, seed=6)
    kw = {"hash_bits": BITS, "signed": True} if features == "hash" else {}
    clf = cwkit.make("arow").use_features(features, **kw).learn_many(rows, y, classes=[0, 1])
    cwkit.save(clf, tmp_path / "m.cwk")
    back = cwkit.load(tmp_path / "m.cwk")
    assert repr(back.feature_map_) == repr(clf.feature_map_)
    assert getattr(back.feature_map_, "names_", None) == getattr(clf.feature_map_, "names_",
                                                                 None)
    np.testing.assert_array_equal(back.predict_proba_many(rows), clf.predict_proba_many(rows))
    x = {"never seen": 1.0, "w1": 2}
    assert back.predict_one(x) == clf.predict_one(x)


def test_a_damaged_vocabulary_is_a_model_file_error(tmp_path):
    rows, y = named_stream(10, seed=8)
    clf = cwkit.make("pa").use_features("vocabulary").learn_many(rows, y, classes=[0, 1])
    cwkit.save(clf, tmp_path / "m.cwk")
    with np.load(tmp_path / "m.cwk") as z:
        files = dict(z)
    files["features/ends"] = files["features/ends"][::-1].copy()
    with open(tmp_path / "bad.cwk", "wb") as f:
        np.savez(f, **files)
    with pytest.raises(cwkit.ModelFileError, match="features/names and features/ends"):
        cwkit.load(tmp_path / "bad.cwk")


def test_a_growing_vocabulary_learns_as_one_fit_at_its_final_width():
    rows, y = named_stream(150, seed=9)
    clf = cwkit.make("arow").use_features("vocabulary")
    clf.learn_many(rows[:30], y[:30], classes=[0, 1])
    width = clf.n_features_in_
    for x, label in zip(rows[30:], y[30:]):
        clf.learn_one(x, label)
    assert clf.n_features_in_ == len(clf.feature_map_.names_) > width
    X = Vocabulary(clf.feature_map_.names_).transform(rows)
    # r="auto" is settled on the first call's rows (30 here): the same r for the one fit
    ref = cwkit.make("arow", r=clf.r_, covariance=clf.covariance_type_).partial_fit(
        X, y, classes=[0, 1])
    np.testing.assert_array_equal(clf.coef_, ref.coef_)
    assert (clf.t_, clf.mistakes_) == (ref.t_, ref.mistakes_)


@pytest.mark.parametrize("make, name", [(cwkit.make, "arow"), (cwkit.make, "cw"),
                                        (cwkit.make, "sop"), (cwkit.make_regressor, "arow")])
def test_a_growing_vocabulary_keeps_a_diagonal_covariance_past_the_full_bound(make, name):
    # one dense row of two names would choose a full matrix, which stops at 4,095 features
    up, down = (True, False) if make is cwkit.make else (1.0, -1.0)
    clf = make(name).use_features("vocabulary").learn_one({"a": 1.0, "b": 2.0}, up)
    assert clf.covariance_type_ == "diag"
    kw = {"classes": [down, up]} if make is cwkit.make else {}
    assert make(name).partial_fit(np.array([[1.0, 2.0]]), [up], **kw).covariance_type_ == "full"
    clf.learn_many([{f"w{i}": 1.0} for i in range(5000)], [up, down] * 2500)
    assert clf.n_features_in_ == 5002


@pytest.mark.parametrize("name, params", [
    ("pa", {}), ("pa1", {}), ("arow", {"covariance": "diag"}), ("arow", {"covariance": "full"})])
def test_regressors_learn_dict_rows_as_the_hashed_csr_rows(name, params):
    rows, _ = named_stream(40, seed=12)
    y = [float(np.sin(i)) for i in range(len(rows))]
    R = ref_rows(rows, bits=5)
    one = cwkit.make_regressor(name, **params).use_features(hash_bits=5)
    many = cwkit.make_regressor(name, **params).use_features(hash_bits=5).learn_many(rows, y)
    ref = cwkit.make_regressor(name, **params)
    for i, (x, target) in enumerate(zip(rows, y)):
        one.learn_one(x, target)
        ref.partial_fit(R[i], y[i:i + 1])
        for attr in ("t_", "mistakes_", "n_updates_", "squared_error_", "absolute_error_",
                     "last_mistakes_", "last_n_updates_", "last_squared_error_",
                     "last_absolute_error_"):
            assert getattr(one, attr) == getattr(ref, attr), attr
        for key, value in _state(ref).items():
            np.testing.assert_array_equal(_state(one)[key], value, err_msg=key)
    batch = cwkit.make_regressor(name, **params).partial_fit(R, y)
    for got, want in ((one, ref), (many, batch)):
        np.testing.assert_array_equal(got.coef_, want.coef_)
    np.testing.assert_array_equal(many.predict_many(rows), batch.predict(R))
    assert [one.predict_one(x) for x in rows[:5]] == ref.predict(R[:5]).tolist()
    assert type(one.predict_one(rows[0])) is float
    # (the compiled scores: first-order and diagonal models)
    assert ("_one" in one.__dict__) == ("_one" in many.__dict__) == ("full" not in
                                                                      params.values())
    assert not hasattr(one, "predict_proba_one")


def test_a_kernel_approx_form_learns_named_rows_through_its_map():
    # its model is as wide as the hashed columns here: the compiled path, which feeds the
    # columns to the model as they are, must not be taken
    rows, y = named_stream(30, seed=14)
    one, many = (cwkit.make("pa1", kernel_approx="rff", n_components=2 ** BITS,
                          gamma=1.0, random_state=0)
                 .use_features(hash_bits=BITS) for _ in range(2))
    for x, label in zip(rows, y):
        one.learn_one(x, label, classes=[0, 1])
    many.learn_many(rows, y, classes=[0, 1])
    np.testing.assert_array_equal(one.coef_, many.coef_)
    assert [one.predict_one(x) for x in rows] == many.predict_many(rows).tolist()
    assert one.predict_proba_one(rows[0]) == many.predict_proba_one(rows[0])

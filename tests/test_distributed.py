"""Training over partitions on Dask (cwkit.distributed, ``--dask``) on a real LocalCluster
of worker processes, started once for the module."""
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import BINARY_CASES, OTHER_CASES, case_id

import cwkit
from cwkit import cli
from cwkit._rowdata import as_rows
from cwkit.models import mixing

distributed = pytest.importorskip(
    "distributed", reason="Dask is not installed (pip install dask distributed; CI installs it "
    "from requirements-test.txt)")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
import cwkit.distributed as cwd  # noqa: E402

CASES = BINARY_CASES + OTHER_CASES
#: One rule of each state shape runs through a cluster in the routine run (first-order,
#: averaged, diagonal and full Gaussian, AdaGrad, SCW, NHERD, a mini-batch window, L1);
#: every other rule with the slow checks (-m slow): each costs a round trip of a cluster.
ROUTINE = {"perceptron", "avg-perceptron", "pa1", "cw-full", "arow", "sop", "adagrad",
           "scw2-full", "nherd", "l1-pa"}


def _routine_or_slow(cases):
    return [c if case_id(c) in ROUTINE or c[1].get("window") else
            pytest.param(c, marks=pytest.mark.slow) for c in cases]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    marker = tmp_path_factory.mktemp("faults") / "die"
    os.environ["CWKIT_DIE_MARKER"] = str(marker)     # inherited by the worker processes
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=":0", silence_logs=50)
        c = distributed.Client(cluster)
    c.wait_for_workers(2, timeout=120)
    c.marker = marker
    yield c
    c.close()
    cluster.close()
    os.environ.pop("CWKIT_DIE_MARKER", None)


def _data(n=120, d=6, k=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.3] = 0.0
    W = rng.normal(size=(d, k))
    y = np.argmax(X @ W + 0.3 * rng.normal(size=(n, k)), axis=1) if k > 2 else \
        (X @ W[:, 0] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    out = {}
    for k in (2, 3):
        X, y = _data(k=k, seed=k)
        path = root / f"k{k}.svm"
        cwkit.dump_svmlight(X, y, path)
        out[k] = (str(path), *cwkit.load_svmlight(path))
    return out


def _same(a, b):
    """Two fitted estimators with the same model, bit for bit, and the same counters."""
    assert a._model.state.keys() == b._model.state.keys()
    for key in a._model.state:
        assert np.array_equal(a._model.state[key], b._model.state[key]), key
    assert (a.t_, a.mistakes_, a.n_updates_) == (b.t_, b.mistakes_, b.n_updates_)
    np.testing.assert_array_equal(a.classes_, b.classes_)


@pytest.mark.parametrize("case", _routine_or_slow(CASES), ids=[case_id(c) for c in CASES])
def test_one_partition_is_sequential_passes_bit_for_bit(client, files, case):
    path, X, y = files[2]
    est = cwd.fit(cwkit.make(case[0], **case[1]), path, client=client, rounds=3,
                  partitions=1)
    _same(est, cwkit.make(case[0], **case[1], n_passes=3).fit(X, y))


@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_kernel_approximations_train_over_partitions(client, files, approx):
    """make(name, kernel_approx=...) is a linear model on explicit features: one partition
    is sequential passes bit for bit, and two mix like any linear model's."""
    path, X, y = files[2]
    params = {"kernel_approx": approx, "gamma": 0.5, "n_components": 20, "random_state": 3}
    est = cwd.fit(cwkit.make("pa1", **params), path, client=client, rounds=2, partitions=1)
    _same(est, cwkit.make("pa1", **params, n_passes=2).fit(X, y))
    two = cwd.fit(cwkit.make("pa1", **params), path, client=client, rounds=2, partitions=2)
    assert two.t_ == 2 * X.shape[0] and np.isfinite(two.decision_function(X)).all()


#: Every multi-class form of seven rules (sop, avg-perceptron and adagrad have no top-k);
#: one form of each rule in the routine run, the others with the slow checks.
MC_ROUTINE = {("pa1", "top1"), ("arow", "ovr"), ("sop", "top1"), ("bpa2", "topk"),
              ("l1-pa", "topk"), ("avg-perceptron", "ovr"), ("adagrad", "top1")}
MC_CASES = [pytest.param(name, strategy, id=f"{name}-{strategy}",
                         marks=() if (name, strategy) in MC_ROUTINE else pytest.mark.slow)
            for name in ("pa1", "arow", "sop", "bpa2", "l1-pa", "avg-perceptron", "adagrad")
            for strategy in ("top1", "ovr", "topk")
            if strategy != "topk" or name not in ("sop", "avg-perceptron", "adagrad")]


@pytest.mark.parametrize(("name", "strategy"), MC_CASES)
def test_one_partition_multiclass_from_a_dask_array(client, files, name, strategy):
    _, X, y = files[3]
    params = {"multiclass": strategy, "k": 2}
    Xd = da.from_array(X.toarray(), chunks=(X.shape[0], 3))   # one row block
    est = cwd.fit(cwkit.make(name, **params), (Xd, da.from_array(y)), client=client,
                  rounds=2)
    _same(est, cwkit.make(name, **params, n_passes=2).fit(X.toarray(), y))


def _ipm(name, params, parts, rounds, rule="average", by_updates=False):
    """Iterative parameter mixing written out: each part trains a copy from the mix."""
    classes = np.unique(np.concatenate([y for _, y in parts]))
    est = cwkit.make(name, **params)
    est._choose(as_rows(parts[0][0]), len(classes))    # "auto" settled on the first rows
    est._reset(classes, parts[0][0].shape[1])
    for _ in range(rounds):
        start = {k: v.copy() for k, v in est._model.state.items()}
        states, updates, windows = [], [], []
        for X, y in parts:
            e = cwkit.make(name, **params)
            e._restore_choices(est._choices())
            e._reset(classes, X.shape[1])
            for key in start:
                e._model.state[key][...] = start[key]
            e.partial_fit(X, y)
            states.append(e._model.state)
            updates.append(e.n_updates_)
            windows.append(e._calibration.rounds())
        c = np.array(updates, float) if by_updates and sum(updates) else None
        mixed = mixing.mix(est._model, states, c, rule, start=start)
        for key, arr in mixed.items():
            est._model.state[key][...] = arr
    for window in windows:      # predict_proba's: the last round's passes, in part order
        est._calibration.add(*window)
    return est


@pytest.mark.slow
@pytest.mark.parametrize(("name", "mix"), [("pa", "average"), ("perceptron", "updates"),
                                           ("arow", "confidence"), ("sop", "auto"),
                                           ("bpa1", "average"), ("pa1", "touched"),
                                           ("avg-perceptron", "touched"),
                                           ("scw1", "average"), ("nherd", "confidence")])
def test_byte_ranges_of_one_file_are_parameter_mixing(client, files, name, mix):
    path, X, y = files[2]
    ranges = cwd.cut(path, 2)
    assert len(ranges) == 2 and ranges[0][1] == ranges[1][0]
    n0 = open(path, "rb").read(ranges[0][1]).count(b"\n")
    est = cwd.fit(cwkit.make(name), path, client=client, rounds=3, mixing=mix, partitions=2)
    rule = {"updates": "average", "auto": "confidence"}.get(mix, mix)
    ref = _ipm(name, {}, [(X[:n0], y[:n0]), (X[n0:], y[n0:])], 3, rule, mix == "updates")
    for key in ref._model.state:
        np.testing.assert_array_equal(est._model.state[key], ref._model.state[key])
    # the workers keep each shard's estimator across rounds; its window starts empty
    for a, b in zip(est._calibration.rounds(), ref._calibration.rounds(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert est.t_ == 3 * X.shape[0]
    assert est.predict(X).shape == y.shape


def test_a_list_of_files_and_sparse_array_blocks(client, files, tmp_path):
    path, X, y = files[3]
    parts = [(X[:50], y[:50]), (X[50:], y[50:])]
    paths = []
    for i, (Xi, yi) in enumerate(parts):
        paths.append(str(tmp_path / f"part{i}.svm"))
        cwkit.dump_svmlight(Xi, yi, paths[-1])
    ref = _ipm("arow", {}, parts, 2, "confidence")
    from_files = cwd.fit(cwkit.make("arow"), paths, client=client, rounds=2)
    Xs = da.from_array(X, chunks=((25, 25, 70), (X.shape[1],)), asarray=False)
    from_arrays = cwd.fit(cwkit.make("arow"), (Xs, da.from_array(y, chunks=50)),
                          client=client, rounds=2, partitions=2)   # blocks 0-1 and 2
    for est in (from_files, from_arrays):
        for key in ref._model.state:
            np.testing.assert_array_equal(est._model.state[key], ref._model.state[key])


def test_one_based_shards_are_shifted_once_in_place(files):
    path, X, y = files[2]
    shard = cwd._parse(path, None, None, "auto", None)     # raw indices: one-based here
    raw = shard.X.indices
    expect = raw - 1
    for _ in range(2):        # a task run again must not shift twice
        done = cwd._finish(shard, True, X.shape[1], 0)
        assert np.shares_memory(done.X.indices, raw)       # no copy of the indices
        np.testing.assert_array_equal(done.X.indices, expect)
    np.testing.assert_array_equal(done.X.toarray(), X.toarray())


def test_workers_parse_with_their_own_threads(client):
    """Two one-thread workers on two cores parse with one thread each, not the reader's
    default of one per core (four threads on two cores)."""
    assert set(client.run(cwd._threads).values()) == {1}
    assert cwd._threads() == 1        # outside a worker


def test_shuffling_is_seeded(client, files):
    path, X, y = files[2]
    a, b, c = (cwd.fit(cwkit.make("pa", random_state=s), path, client=client, rounds=2,
                       shuffle=True, partitions=2) for s in (1, 1, 2))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_result_is_an_ordinary_estimator(client, files, tmp_path):
    path, X, y = files[3]
    rounds = []
    est = cwd.fit(cwkit.make("arow"), path, client=client, rounds=2, callback=rounds.append)
    assert [r["round"] for r in rounds] == [1, 2]
    assert all(r["examples"] == X.shape[0] and r["shards"] == 2 for r in rounds)
    # the state (here mu and the full Sigma: "auto" on narrow dense rows), there and back
    state_bytes = sum(a.nbytes for a in est._model.state.values())
    assert rounds[0]["bytes"] == 2 * state_bytes * 2
    cwkit.save(est, tmp_path / "m.cwk")
    back = cwkit.load(tmp_path / "m.cwk")
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert est.score(X, y) > 0.7


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("name", ["pa1", "arow"])
def test_a_shard_validates_its_rows_once_and_leaves_them_behind(files, monkeypatch, name,
                                                                 shuffle):
    """A shard's tasks (run here in process) validate its rows once, the choices made
    from them and every round sharing them; its rounds make partial_fit's passes bit for
    bit, over the rows in the seed's permutation when shuffled (without copying them); a
    shard Dask sends to another worker (its __getstate__, which pickling and copy.copy
    both use) leaves the validated view (not picklable) behind."""
    import copy
    _, X, y = files[2]
    X = X.copy()                              # (the module's data: not changed)
    X.indices[:2] = X.indices[1::-1].copy()   # one row out of order: the view is sorted
    shell = cwkit.make(name).partial_fit(X[:4], y[:4], classes=[0, 1])
    ref = cwkit.make(name).partial_fit(X[:4], y[:4], classes=[0, 1])
    calls = []
    validate = cwd.as_rows
    monkeypatch.setattr(cwd, "as_rows", lambda *a, **k: calls.append(1) or validate(*a, **k))
    shard = cwd._Shard(X, y, "k2.svm")
    cwd._choices(shell, shard, 2)     # (the driver asks the first shard first)
    state = {"state": {k: v.copy() for k, v in shell._model.state.items()}, "t": shell.t_}
    for r in range(3):
        if r == 2:
            shard = copy.copy(shard)
            assert shard.rows is None
        seed = 10 + r if shuffle else None
        res = cwd._train(shell, state, shard, seed)
        perm = np.random.default_rng(seed).permutation(y.size) if shuffle else slice(None)
        ref.partial_fit(X[perm], y[perm])
        for key, arr in ref._model.state.items():
            assert np.array_equal(res["state"][key], arr), (r, key)
        assert res["rounds"] == y.size and res["mistakes"] == ref.last_mistakes_
        state = {"state": {k: v.copy() for k, v in res["state"].items()},
                 "t": state["t"] + res["rounds"]}
    assert len(calls) == 2      # the choices, then the first round after the shard travelled


def test_dask_sees_the_bytes_a_shard_holds(files):
    """Dask's memory accounting (spilling, moving data) reads a shard's real size."""
    _, X, y = files[2]
    shell = cwkit.make("arow").partial_fit(X[:4], y[:4], classes=[0, 1])
    shard = cwd._Shard(X, y, "k2.svm")
    held = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes + y.nbytes
    assert held <= dask.sizeof.sizeof(shard) < held + 1000
    cwd._train(shell, {"state": shell._model.state, "t": shell.t_}, shard, None)
    state = sum(a.nbytes for a in shell._model.state.values())
    assert held + state <= dask.sizeof.sizeof(shard) < held + state + 1000


def test_a_shard_keeps_only_the_float64_rows_it_trains_on(files):
    """Rows converted for the view (float32 here) replace the shard's input, which is
    not kept beside them."""
    _, X, y = files[2]
    shell = cwkit.make("pa").partial_fit(X[:4], y[:4], classes=[0, 1])
    shard = cwd._Shard(X.astype(np.float32), y, "k2.svm")
    cwd._train(shell, {"state": shell._model.state, "t": shell.t_}, shard, None)
    assert shard.X is shard.rows.X and shard.X.dtype == np.float64


def test_a_bad_row_is_named_as_a_local_read_names_it(client, files, tmp_path):
    path, X, y = files[2]
    lines = open(path).read().splitlines()
    lines[100] = "1 3:abc"
    bad = tmp_path / "bad.svm"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(cwkit.SvmlightError) as local:
        cwkit.load_svmlight(bad)
    with pytest.raises(cwkit.SvmlightError) as remote:
        cwd.fit(cwkit.make("pa"), str(bad), client=client, partitions=3)
    assert str(remote.value) == str(local.value)
    assert remote.value.line == 101


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_failing_update_names_the_row_of_the_file(client, tmp_path, shuffle):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[31, 0] = 1e200                       # its squared norm is not finite
    y = np.arange(40) % 2
    path = tmp_path / "huge.svm"
    cwkit.dump_svmlight(X, y, path)
    with pytest.raises(cwkit.ModelError, match=rf"{path}, row 32: the score or squared"):
        cwd.fit(cwkit.make("pa", random_state=0), str(path), client=client, partitions=2,
                shuffle=shuffle)


@pytest.mark.slow
def test_a_worker_that_dies_mid_round_is_replaced_and_its_shard_rerun(client, files):
    """... and the next fit, started at once, waits for its replacement: it cuts as many
    partitions by default (one per thread) and trains the same model."""
    sys.path.insert(0, os.path.dirname(__file__))
    from _dask_faults import DiesInPass
    path, X, y = files[2]
    client.marker.write_text("1")
    est = cwd.fit(DiesInPass(), path, client=client, rounds=2)
    assert client.marker.read_text() == "0"
    client.marker.unlink()
    rounds = []
    ref = cwd.fit(DiesInPass(), path, client=client, rounds=2, callback=rounds.append)
    assert [r["shards"] for r in rounds] == [2, 2]
    _same(est, ref)


def test_a_cluster_with_fewer_threads_than_before_is_reported(client, files, monkeypatch):
    path = files[2][0]
    monkeypatch.setattr(cwd, "REPLACE_WAIT", 0.2)
    monkeypatch.setitem(cwd._SEEN, client.scheduler_info()["id"], 3)
    rounds = []
    with pytest.warns(RuntimeWarning, match="the Dask cluster has 2 worker threads, 3 when "
                      "an earlier fit started"):
        cwd.fit(cwkit.make("pa"), path, client=client, callback=rounds.append)
    assert rounds[0]["shards"] == 2


def test_a_connection_closed_mid_round_sends_the_round_again(client, files, monkeypatch):
    path = files[2][0]
    ref = cwd.fit(cwkit.make("arow"), path, client=client, rounds=2, partitions=2)
    scatter, calls = client.scatter, []

    def closes_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:       # the second round's state
            raise distributed.comm.CommClosedError("in <TCP (closed)>: Stream is closed")
        return scatter(*args, **kwargs)

    monkeypatch.setattr(client, "scatter", closes_once)
    _same(cwd.fit(cwkit.make("arow"), path, client=client, rounds=2, partitions=2), ref)
    assert len(calls) == 5      # the shell, round 1, round 2 lost: the shell and the state


def test_a_scheduler_address_is_a_client(client, files):
    path = files[2][0]
    _same(cwd.fit(cwkit.make("pa"), path, client=client.scheduler.address, partitions=2),
          cwd.fit(cwkit.make("pa"), path, client=client, partitions=2))
    with pytest.raises(TypeError, match="client must be a distributed.Client or the "
                       "address of a scheduler"):
        cwd.fit(cwkit.make("pa"), path, client=2)


@pytest.mark.slow
def test_a_worker_that_keeps_dying_is_reported_and_no_model_is_kept(client, files):
    """On a cluster of its own (one worker, no second try), not to disturb the others."""
    sys.path.insert(0, os.path.dirname(__file__))
    from _dask_faults import DiesInPass
    path = files[2][0]
    marker = os.environ["CWKIT_DIE_MARKER"]
    with open(marker, "w") as f:
        f.write("-1")
    est = DiesInPass()
    try:
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            cluster = distributed.LocalCluster(n_workers=1, processes=True,
                                               threads_per_worker=1, dashboard_address=":0",
                                               silence_logs=50)
        with distributed.Client(cluster) as c, pytest.raises(cwd.WorkerLost) as lost:
            cwd.fit(est, path, client=c, rounds=2, partitions=2)
        assert str(lost.value) == ("a worker died each time it ran a shard's pass, on 1 "
                                   "worker (Dask's distributed.scheduler.allowed-failures "
                                   "is 0); no model")
    finally:
        os.unlink(marker)
        cluster.close()
    assert not hasattr(est, "classes_")


def test_bad_options(client, files):
    path = files[2][0]
    with pytest.raises(ValueError, match="confidence mixing combines Gaussians"):
        cwd.fit(cwkit.make("pa"), path, client=client, mixing="confidence")
    with pytest.raises(ValueError, match="touched mixing combines the weight changes"):
        cwd.fit(cwkit.make("arow"), path, client=client, mixing="touched")
    for kernel in ({"kernel": "rbf"}, {"kernel": "rbf", "multiclass": "ovr"}):
        with pytest.raises(ValueError, match="kernel models cannot be mixed"):
            cwd.fit(cwkit.make("pa1", **kernel), path, client=client)
        with pytest.raises(ValueError, match="kernel models cannot be mixed"):   # no work
            cwd.fit(cwkit.make("pa1", **kernel), "no such file", client=object())
    with pytest.raises(ValueError, match="mixing must be one of"):
        cwd.fit(cwkit.make("pa"), path, client=client, mixing="median")
    with pytest.raises(ValueError, match="rounds must be"):
        cwd.fit(cwkit.make("pa"), path, client=client, rounds=0)


def test_a_compressed_file_cannot_be_cut(tmp_path):
    import gzip
    path = tmp_path / "a.svm.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"1 1:1\n-1 2:1\n")
    with pytest.raises(ValueError, match="compressed file cannot be cut"):
        cwd.cut(str(path), 2)


def test_cut_is_at_line_boundaries(tmp_path):
    path = tmp_path / "a.svm"
    path.write_bytes(b"".join(b"%d 1:%d\n" % (i % 2, i) for i in range(1000)))
    data = path.read_bytes()
    ranges = cwd.cut(str(path), 7)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    for (_, b), (c, _) in zip(ranges, ranges[1:]):
        assert b == c and data[b - 1:b] == b"\n"
    assert cwd.cut(str(path), 5000)[-1][1] == len(data)


def test_import_cwkit_does_not_import_dask():
    import subprocess
    code = "import sys, cwkit; cwkit.distributed.fit; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_without_dask_the_message_says_what_to_install(monkeypatch):
    for name in ("distributed", "dask", "dask.array"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r'pip install dask distributed \(or, in a clone '
                       r'of cwkit, pip install -e "\.\[dask\]"\)'):
        cwd.fit(cwkit.make("pa"), "x.svm")


# ---------------------------------------------------------------- the command line

@pytest.mark.slow
def test_cli_train_one_worker_equals_passes(files, tmp_path, capsys):
    path = files[2][0]
    assert cli.main(["train", "--algo", "arow", "--dask", "local:1", "--rounds", "3", path,
                     "-o", str(tmp_path / "d.cwk"), "-q"]) == 0
    assert cli.main(["train", "--algo", "arow", "--passes", "3", path,
                     "-o", str(tmp_path / "s.cwk"), "-q"]) == 0
    _same(cwkit.load(tmp_path / "d.cwk"), cwkit.load(tmp_path / "s.cwk"))


def test_cli_train_touched_mixing(client, files, tmp_path):
    path = files[3][0]
    assert cli.main(["train", "--algo", "pa1", "--dask", client.scheduler.address,
                     "--rounds", "2", "--mixing", "touched", path, "-o",
                     str(tmp_path / "m.cwk"), "-q"]) == 0
    _same(cwkit.load(tmp_path / "m.cwk"),
          cwd.fit(cwkit.make("pa1"), path, client=client, rounds=2, mixing="touched"))


def test_cli_train_and_eval_on_a_running_scheduler(client, files, tmp_path, capsys):
    path = files[3][0]
    address = client.scheduler.address
    assert cli.main(["train", "--algo", "sop", "--dask", address, "--rounds", "2",
                     "--mixing", "confidence", path, "-o", str(tmp_path / "m.cwk")]) == 0
    err = capsys.readouterr().err
    assert "round 2:" in err and "on 2 shards" in err
    assert cwkit.load(tmp_path / "m.cwk").t_ == 2 * files[3][1].shape[0]
    assert cli.main(["eval", "--algos", "pa,arow,pa:average=false", "--dask", address,
                     "--rounds", "2", "--test", path, path, "--format", "json", "-q"]) == 0
    import json
    (task,) = json.loads(capsys.readouterr().out)["tasks"]
    assert [r["algo"] for r in task["results"]] == ["pa", "arow", "pa:average=false"]
    assert len(task["results"][0]["rounds"]) == 2
    assert 0 <= task["results"][1]["test_error"] < 0.5
    assert task["run"]["dask"] == {"cluster": address, "rounds": 2, "mixing": "auto"}
    assert [r["params"]["mixing"] for r in task["results"]] == ["average", "confidence",
                                                                 "average"]
    # with --test both the average and the last iterate; the last iterate is the model
    # average=False mixes; test_error is the model of the parameters
    pa, arow, last = task["results"]
    assert pa["last_test_error"] == last["test_error"] == last["last_test_error"]
    assert pa["test_error"] == pa["avg_test_error"] == last["avg_test_error"]
    assert arow["test_error"] == arow["last_test_error"]


@pytest.mark.slow   # about 12 s: a cluster and two evals
def test_cli_eval_dask_prints_the_table_of_every_eval(files, tmp_path, capsys):
    """One worker and --rounds R is --passes R: eval --dask prints the same table (rank,
    star, columns, footer) with the same counters and errors, the run line saying where."""
    path = files[2][0]
    common = ["eval", "--algos", "pa,arow", path, "--test", path, "-q"]
    assert cli.main([*common, "--passes", "2", "--format", "json"]) == 0
    import json
    (local,) = json.loads(capsys.readouterr().out)["tasks"]
    assert cli.main([*common, "--dask", "local:1", "--rounds", "2", "--format", "json"]) == 0
    (dask,) = json.loads(capsys.readouterr().out)["tasks"]
    measured = ("examples", "mistakes", "online_error", "updates", "test_error",
                "last_test_error", "avg_test_error", "passes", "failed")
    assert [[r[k] for k in measured] for r in dask["results"]] == \
        [[r[k] for k in measured] for r in local["results"]]
    assert {k: v for k, v in dask["run"].items() if k != "dask"} == local["run"]
    assert cli.main([*common, "--passes", "2"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert cli.main([*common, "--dask", "local:1", "--rounds", "2"]) == 0
    dask_table = capsys.readouterr().out.splitlines()
    assert dask_table[:2] == table[:2]      # the title and the header
    assert [ln.split()[:9] for ln in dask_table[2:4]] == [ln.split()[:9] for ln in table[2:4]]
    assert dask_table[5] == table[5] + ", on Dask local:1: 2 rounds of auto mixing, one " \
        "pass per partition each"
    assert "  arow: " in dask_table[8] and dask_table[8].endswith(" mixing=confidence")
    assert cli.main([*common, "--dask", "local:1", "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.endswith(",dask") and row.endswith(',"on Dask local:1: 1 round of auto '
                                                     'mixing, one pass per partition each"')


@pytest.mark.parametrize(("argv", "message"), [
    (["--dask", "local:0"], "local:N with N >= 1"),
    (["--dask", "local:2", "--passes", "2"], "use --rounds instead of --passes"),
    (["--rounds", "2"], "--rounds and --mixing go with --dask"),
    (["--dask", "local:2", "--hash-bits", "10"], "--hash-bits is not supported"),
    (["--dask", "local:2", "--param", "kernel=rbf"], "--dask: pa: kernel models cannot be "
     "mixed"),
])
def test_cli_usage_errors(files, tmp_path, capsys, argv, message):
    code = cli.main(["train", "--algo", "pa", *argv, files[2][0], "-o",
                     str(tmp_path / "m.cwk")])
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_cli_errors_are_one_line_and_dask_logs_only_with_debug(files, tmp_path, capfd,
                                                                monkeypatch):
    """The workers' log of a failed task (and its traceback) is not printed; a cluster
    that fails to start (a worker killed meanwhile) is one line too."""
    lines = open(files[2][0]).read().splitlines()
    lines[70] = "1 2:x"
    bad = tmp_path / "bad.svm"
    bad.write_text("\n".join(lines) + "\n")
    argv = ["train", "--algo", "pa", "--dask", "local:1", str(bad), "-o", str(tmp_path / "m")]
    assert cli.main(argv) == 1
    assert capfd.readouterr().err == (f"cwkit: error: {bad}:71: invalid feature value in "
                                      "'2:x': expected a decimal number (no hex, nan or "
                                      "inf)\n")

    def fails(*args, **kwargs):
        raise RuntimeError("Nanny failed to start.")

    monkeypatch.setattr(distributed, "LocalCluster", fails)
    assert cli.main(argv) == 1
    assert capfd.readouterr().err == ("cwkit: error: --dask local:1: the local cluster did "
                                      "not start (Nanny failed to start.)\n")
    with pytest.raises(RuntimeError, match="Nanny failed"):
        cli.main([*argv, "--debug"])


def test_cli_bad_row_is_file_line(client, files, tmp_path, capsys):
    lines = open(files[2][0]).read().splitlines()
    lines[70] = "1 2:x"
    bad = tmp_path / "bad.svm"
    bad.write_text("\n".join(lines) + "\n")
    assert cli.main(["train", "--algo", "pa", "--dask", client.scheduler.address, str(bad),
                     "-o", str(tmp_path / "m.cwk")]) == 1
    assert f"{bad}:71: invalid feature value" in capsys.readouterr().err
    assert not (tmp_path / "m.cwk").exists()


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_a_nan_in_a_dask_array_is_named_as_a_local_fit_names_it(client, shuffle, sparse):
    """The row a NaN error names is the row of the whole array, as in a local fit, not
    of the partition; nothing is fitted."""
    X, y = _data(n=60)
    X[47, 1] = np.nan
    chunks = da.from_array(sp.csr_matrix(X) if sparse else X, chunks=(20, -1),
                           asarray=False if sparse else None)
    with pytest.raises(ValueError) as local:
        cwkit.make("arow").fit(X, y)
    assert "(row 47)" in str(local.value)
    est = cwkit.make("arow")
    with pytest.raises(ValueError) as remote:
        cwd.fit(est, (chunks, da.from_array(y, chunks=20)), client=client, shuffle=shuffle)
    assert str(remote.value) == str(local.value)
    assert not hasattr(est, "classes_")


def test_sparse_chunks_equal_dense_chunks(client, files):
    _, X, y = files[2]
    dense = cwd.fit(cwkit.make("cw"), (da.from_array(X.toarray(), chunks=(40, -1)),
                                       da.from_array(y, chunks=40)), client=client)
    sparse = cwd.fit(cwkit.make("cw"), (da.from_array(sp.csr_matrix(X), chunks=(40, -1),
                                                      asarray=False),
                                        da.from_array(y, chunks=40)), client=client)
    assert dense.covariance_type_ == sparse.covariance_type_   # density is in the values
    assert dense._model.state.keys() == sparse._model.state.keys()
    for key in dense._model.state:
        np.testing.assert_array_equal(dense._model.state[key], sparse._model.state[key])


@pytest.mark.slow
@pytest.mark.parametrize(("name", "params", "mix"), [
    ("arow", {"covariance": "diag"}, "confidence"), ("arow", {"covariance": "full"}, "average"),
    ("sop", {"covariance": "diag"}, "updates"), ("bpa1", {"C": 0.3, "batch_size": 3}, "average"),
    ("l1-pa", {"beta": 10.0}, "average"), ("adagrad", {"lam": 0.01}, "average")],
    ids=["arow-diag-confidence", "arow-full-average", "sop-diag-updates", "bpa1-average",
         "l1-pa-average", "adagrad-average"])
def test_averaged_models_of_unequal_byte_ranges_report_every_iterates_mean(client, files,
                                                                          name, params, mix):
    """average=True, two byte ranges of unequal rows: after one round from the initial
    model the mixed model reports the mean of the shards' iterates, each counted once (the
    shards' averaged weights weighted by their rows; AdaGrad, whose round count is the
    mean: the (weighted) mean of them), its round count is every row; a second round is
    parameter mixing written out."""
    path, X, y = files[2]
    params = {**params, "average": True, "intercept_scaling": 1.0}
    n0 = open(path, "rb").read(cwd.cut(path, 2)[0][1]).count(b"\n")
    parts = [(X[:n0], y[:n0]), (X[n0:], y[n0:])]
    assert n0 != X.shape[0] - n0
    est = cwd.fit(cwkit.make(name, **params), path, client=client, mixing=mix, partitions=2)
    shards = [cwkit.make(name, **params).partial_fit(Xi, yi, classes=[0, 1])
              for Xi, yi in parts]
    if name == "adagrad":
        c = np.array([s.n_updates_ for s in shards], float) if mix == "updates" else np.ones(2)
    else:
        c = np.array([n0, X.shape[0] - n0], float)
    c /= c.sum()
    np.testing.assert_allclose(est._model.weights(),
                               sum(ci * s._model.weights() for ci, s in zip(c, shards)),
                               rtol=1e-12, atol=1e-14)
    if name != "adagrad":     # (AdaGrad's t is the mean: its RDA weights use the mean sums)
        assert np.ravel(est._model.named_state()["u"])[-1] == X.shape[0]
    assert est._model.state_problem() is None     # (AdaGrad's t is fractional here)
    est = cwd.fit(cwkit.make(name, **params), path, client=client, rounds=2, mixing=mix,
                  partitions=2)
    rule = {"updates": "average"}.get(mix, mix)
    ref = _ipm(name, params, parts, 2, rule, mix == "updates")
    for key in ref._model.state:
        np.testing.assert_array_equal(est._model.state[key], ref._model.state[key])

"""skinflint.distributed on a real two-process LocalCluster: every result
equals the single-machine one bit for bit (models as JSON text, Dask pickles
only tasks, rows and results)."""
import os
import signal
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from skinflint import datasets, ir  # noqa: E402
from skinflint import distributed as sfd  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402
from skinflint.trainers import GreedyMiserClassifier, cost_accuracy_curve, format_table  # noqa: E402
from skinflint.verify import runtime as local_runtime  # noqa: E402
from skinflint.verify import verify as local_verify  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    tr, te = datasets.make_cheap_vs_exact(1200, seed=3).split(0.3, seed=0)
    tr, va = tr.split(0.3, seed=1)
    return tr, va, te


@pytest.fixture(scope="module")
def model(data):
    tr, _, _ = data
    return GreedyMiserClassifier(n_estimators=20, max_depth=3, feature_costs=tr.feature_costs,
                                 cost_tradeoff=1e-3, random_state=0, verbose=0).fit(tr.X, tr.y).model_


def assert_same_prediction(got, want):
    """Every field, dtype, shape and byte equal (float fields compared as
    bits: NaNs are canonical, so equal bits is the parity rule)."""
    for f in ("output", "scores", "proba", "cost", "stage", "features_used", "fetches"):
        a, b = getattr(got, f, None), getattr(want, f, None)
        assert (a is None) == (b is None), f
        if a is None:
            continue
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (f, a.dtype, b.dtype, a.shape, b.shape)
        assert a.tobytes() == b.tobytes(), f


def budgets_for(model, X, seed=0):
    """Per-row budgets cutting rows at, below and around their own cost."""
    from skinflint.verify import budgets_around
    return budgets_around(ReferenceRuntime(model).predict(X).cost, seed)


@pytest.mark.parametrize("runtime", ["reference", "onnx", "c", "c-lazy"])
def test_predict_over_a_dask_array_equals_one_machine(client, data, model, runtime):
    X = data[2].X
    b = budgets_for(model, X)
    # rows in 4 chunks, budgets chunked differently: they must travel with their rows
    Xd = da.from_array(X, chunks=(100, 3))
    bd = da.from_array(b, chunks=70)
    assert set(sfd.warm_workers(model, runtime, client=client).values()) == {1}   # built on both workers
    got = sfd.compute(sfd.predict(model, Xd, bd, runtime=runtime))
    want = local_runtime(runtime, model).predict(X, b)
    assert_same_prediction(got, want)
    # 4 partitions (and a zero-row one for the dtypes) reused each worker's runtime
    assert len(Xd.chunks[0]) == 4
    assert set(sfd.warm_workers(model, runtime, client=client).values()) == {1}


def test_predict_over_a_dataframe_with_a_budget_column(client, data, model):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X = data[2].X
    b = budgets_for(model, X, seed=1)
    df = pd.DataFrame(X.astype(np.float64), columns=[f.name for f in model.features]).assign(budget=b)
    ddf = dd.from_pandas(df, npartitions=3)
    got = sfd.compute(sfd.predict(model, ddf, "budget", runtime="c-lazy"))
    # float64 columns are rounded to float32 on the workers as they are here
    want = local_runtime("c-lazy", model).predict(df.drop(columns="budget").to_numpy(), b)
    assert_same_prediction(got, want)
    # or the budgets as a Dask series with the frame's partitions
    got = sfd.compute(sfd.predict(model, ddf.drop(columns="budget"), ddf["budget"], runtime="c-lazy"))
    assert_same_prediction(got, want)


class Broken:
    """The reference, wrong on purpose: rows whose first feature is a
    multiple of 5 get their first score moved by (that value + 1) ulps, and
    the multiples of 15 also pay one unit more; so every wrong row has its
    own ulp distance and the worst rows have one order."""
    name = "broken"

    def __init__(self, model):
        self.ref = ReferenceRuntime(model)

    def predict(self, X, budget=None):
        p = self.ref.predict(X, budget)
        X = np.asarray(X, np.float32)
        k = X[:, 0].astype(np.int64)
        bad = k % 5 == 0
        p.scores.view(np.int32)[bad, 0] += (k[bad] + 1).astype(np.int32)
        p.cost[k % 15 == 0] += 1.0
        return p


def test_verify_over_a_collection_merges_to_the_one_machine_report(client, data, model):
    X = data[2].X.copy()
    rng = np.random.default_rng(0)
    X[:, 0] = rng.permutation(len(X))          # distinct integers: distinct ulp distances
    b = budgets_for(model, X, seed=2)
    Xd, bd = da.from_array(X, chunks=(90, -1)), da.from_array(b, chunks=90)
    got = sfd.verify(model, Xd, bd, runtimes=("onnx", "c", "c-lazy", Broken))
    want = local_verify(model, X, runtimes=("onnx", "c", "c-lazy", Broken(model)), budget=b, budgets=None,
                        adversarial=False)
    assert got.to_json() == want.to_json()
    broken = got.backends[-1]
    assert not broken.ok and len(broken.worst_rows) == 3 and broken.cost > 0
    assert all(r.ok for r in got.backends[:-1])


def test_bad_rows_raise_the_local_error(client, data, model):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X = data[2].X[:60]
    b = np.ones(len(X))
    b[45] = np.nan                              # in the second of two partitions
    with pytest.raises(ValueError) as local:
        ReferenceRuntime(model).predict(X[30:], b[30:])
    with pytest.raises(ValueError) as remote:
        sfd.compute(sfd.predict(model, da.from_array(X, chunks=(30, -1)), da.from_array(b, chunks=30)))
    assert type(remote.value) is type(local.value)
    assert str(remote.value) == f"partition 1: {local.value}"
    # a text column in one partition of a DataFrame
    df = pd.DataFrame(X.astype(np.float64), columns=[f.name for f in model.features])
    df[df.columns[1]] = df[df.columns[1]].astype(object)
    df.iloc[50, 1] = "n/a"
    with pytest.raises(ValueError) as local:
        ReferenceRuntime(model).predict(df.iloc[30:])
    with pytest.raises(ValueError) as remote:
        sfd.compute(sfd.predict(model, dd.from_pandas(df, npartitions=2)))
    # the column is text in both partitions: whichever fails first is reported
    assert str(remote.value) in (f"partition 0: {local.value}", f"partition 1: {local.value}")


@pytest.fixture(scope="module")
def sweep(data):
    """The sweep's arguments and its serial rows."""
    tr, va, te = data
    est = GreedyMiserClassifier(n_estimators=40, max_depth=3, feature_costs=tr.feature_costs,
                                random_state=0, verbose=0)
    args = (est, {"cost_tradeoff": [0.0, 1e-3, 1e-2]}, tr.X, tr.y, va.X, va.y, te.X, te.y)
    return args, cost_accuracy_curve(*args, label="Greedy Miser", verbose=0)


def assert_same_curve(got, want):
    assert format_table(got) == format_table(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert ir.to_json(g["model"]) == ir.to_json(w["model"])
        assert g.keys() == w.keys()
        for k in g:
            if k not in ("model", "fit_time"):         # fit_time is each point's own wall time
                assert g[k] == w[k] and type(g[k]) is type(w[k]), k


def test_sweep_on_the_cluster_equals_the_serial_sweep(client, sweep):
    args, want = sweep
    got = sfd.cost_accuracy_curve(*args, label="Greedy Miser", client=client, verbose=0)
    assert_same_curve(got, want)


def test_a_worker_killed_during_a_sweep_changes_nothing(client, sweep):
    args, want = sweep
    futures = sfd.submit_curve(*args, label="Greedy Miser", client=client)
    keys = {f.key for f in futures}
    deadline = time.monotonic() + 60
    while True:
        running = {w: [k for k in ks if k in keys] for w, ks in client.processing().items()}
        victim = next(((w, ks[0]) for w, ks in running.items() if ks), None)
        if victim or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert victim, "no sweep task started within 60 s"
    worker, key = victim
    pid = client.run(os.getpid, workers=[worker])[worker]
    os.kill(pid, signal.SIGKILL)
    got = sfd.gather_curve(futures, client=client, verbose=0)
    assert_same_curve(got, want)
    # the scheduler saw the killed task die with its worker, and ran it again
    suspicious = client.run_on_scheduler(lambda dask_scheduler: {
        k: dask_scheduler.tasks[k].suspicious for k in keys if k in dask_scheduler.tasks})
    assert worker not in client.scheduler_info()["workers"]
    assert suspicious[key] >= 1 or any(v >= 1 for v in suspicious.values())

"""AFR with its defaults, as a new user calls it (issue 28): only
``feature_costs`` (and ``eval_set`` where the protocol has one)."""
import numpy as np
import pytest

from skinflint import datasets
from skinflint.runtimes.reference import predict
from skinflint.trainers.anytime.afr import AFRClassifier


@pytest.mark.slow       # three default fits of 1000 + 1000 rows: about 33 s of one core in all
def test_defaults_on_xor_with_an_eval_set():
    """The issue's protocol: ``make_xor10`` with 1000 training, 1000
    validation (``eval_set``) and 1000 test rows, seeds 0-2, nothing but the
    costs and the seed.  The paper (§5, Fig. 2) reports 0.84 at budget 25 and
    0.98 in full; the gates are the issue's, mean over the seeds: >= 0.75 and
    >= 0.85.  Measured 0.868 and 0.961."""
    at25, full = [], []
    for seed in (0, 1, 2):
        ds = datasets.make_xor10(n=3000, seed=seed)
        X, y = ds.X, ds.y
        m = AFRClassifier(feature_costs=ds.feature_costs, random_state=seed).fit(
            X[:1000], y[:1000], eval_set=(X[1000:2000], y[1000:2000]))
        at25.append(np.mean(predict(m.model_, X[2000:], budget=25.0).output == y[2000:]))
        full.append(np.mean(predict(m.model_, X[2000:]).output == y[2000:]))
    assert np.mean(at25) >= 0.75, at25
    assert np.mean(full) >= 0.85, full


def _keel(loader):
    def load():
        try:
            return loader()
        except FileNotFoundError as e:
            pytest.skip(str(e))
    return load


DATASETS = {
    "breast_cancer": datasets.load_breast_cancer,
    "spambase": _keel(datasets.load_spambase),
    "magic": _keel(datasets.load_magic),
    "letter": _keel(datasets.load_letter),
    "xor10": datasets.make_xor10,
    "noisy_circle": datasets.make_noisy_circle,
    "cheap_vs_exact": datasets.make_cheap_vs_exact,
    "cheap_rejects": datasets.make_cheap_rejects,       # 90 % one class: the prior is hard to beat
}


@pytest.mark.slow       # the defaults build 100-300 dimensions: about 15 s of one core for the 8 sets
@pytest.mark.parametrize("name", list(DATASETS))
def test_defaults_beat_the_prior(name):
    """Only the data set's costs (groups included): a seeded 300-row training
    subsample, tested on up to 2000 other rows, beats always answering the
    training majority class.  Measured margins over the prior at 600 rows:
    +0.09 (cheap_rejects, prior 0.89) to +0.50 (noisy_circle)."""
    ds = DATASETS[name]()
    rows = np.random.default_rng(0).permutation(len(ds.y))
    tr, te = rows[:300], rows[300:2300]
    m = AFRClassifier(feature_costs=ds.costs, random_state=0).fit(ds.X[tr], ds.y[tr])
    prior = np.mean(ds.y[te] == np.bincount(ds.y[tr]).argmax())
    assert m.score(ds.X[te], ds.y[te]) > prior

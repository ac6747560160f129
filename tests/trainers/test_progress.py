"""Every registered trainer shows a progress bar over its outer loop when
``verbose`` is on, and nothing when it is off (issue 29 item 3): one meaning
of ``verbose`` in every trainer (``trainers.common.progress_bar``)."""
import pytest

from skinflint import datasets
from skinflint.trainers import TRAINERS, common


@pytest.fixture(scope="module")
def data():
    ds = datasets.make_cheap_vs_exact(300, seed=0)
    return ds.X, ds.y, ds.feature_costs


_CLASSIFIERS = sorted(n for n, s in TRAINERS.items() if s.classifier is not None)


def test_every_registered_trainer_takes_verbose():
    lacking = [n for n in _CLASSIFIERS if "verbose" not in TRAINERS[n].classifier().get_params()]
    assert lacking == []


# trainers whose outer loop is their grid of C (LARS-SVM: its full SVM's; its own LAR steps are quick)
_C_GRIDS = {"linear-svm", "svm", "lars-svm"}


@pytest.mark.parametrize("name", _CLASSIFIERS)
def test_verbose_shows_a_bar_and_quiet_shows_none(name, data, capsys, monkeypatch):
    X, y, costs = data
    monkeypatch.setattr(common, "PROGRESS_DELAY_S", 0.0)   # bars at once, whatever the default
    spec = TRAINERS[name]
    params = dict(spec.test_params, feature_costs=costs)
    if name in _C_GRIDS:
        params["C"] = (1.0, 10.0)   # a grid, so the SVMs have a loop to show
    spec.estimator("classification", **dict(params, verbose=1)).fit(X, y)
    shown = capsys.readouterr().err
    assert "%|" in shown or "it/s" in shown or "/s]" in shown, (name, shown[-300:])
    spec.estimator("classification", **dict(params, verbose=0)).fit(X, y)
    assert capsys.readouterr().err == ""


class _InterruptedBar(common.tqdm):
    """A bar whose loop gets a Ctrl-C: a bar iterated over gets it as its
    loop starts, a bar updated by hand at its first update."""
    made: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _InterruptedBar.made.append(self)

    def __iter__(self):
        # the bar is already on the screen (no delay), the first round has not begun: tqdm's own
        # iterator, which closes its bar when it is released, does not exist yet
        raise KeyboardInterrupt

    def update(self, n=1):
        super().update(n)
        raise KeyboardInterrupt


@pytest.mark.parametrize("name", _CLASSIFIERS)
def test_ctrl_c_closes_the_bar(name, data, monkeypatch, capsys):
    # A bar still open when the interrupt reaches the CLI runs into its "skinflint: interrupted"
    # line (a fresh-clone CI run printed "0/100000 [00:00<?, ?round/s]skinflint: interrupted":
    # the Ctrl-C came as the bar appeared, before the first round).  The interrupt is held here as
    # the CLI holds it while it prints that line (the traceback keeps the trainer's frame, and the
    # bar with it), so only a bar closed on the way out is closed
    X, y, costs = data
    monkeypatch.setattr(common, "tqdm", _InterruptedBar)
    monkeypatch.setattr(_InterruptedBar, "made", [])
    spec = TRAINERS[name]
    params = dict(spec.test_params, feature_costs=costs, verbose=1)
    if name in _C_GRIDS:
        params["C"] = (1.0, 10.0)
    with pytest.raises(KeyboardInterrupt) as interrupt:
        spec.estimator("classification", **params).fit(X, y)
    assert _InterruptedBar.made, name
    assert all(bar.disable for bar in _InterruptedBar.made), name   # tqdm's close() sets disable
    del interrupt

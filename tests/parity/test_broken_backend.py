"""verify must catch a backend that is wrong by one threshold."""
import numpy as np

from skinflint import ir
from skinflint.cli import main
from skinflint.runtimes import c as cmod
from tests.conftest import EXAMPLES


def _flip_first_threshold(model):
    d = ir.to_dict(model)
    bank = next(n for n in d["nodes"] if n["kind"] == "trees")
    i = next(k for k, f in enumerate(bank["feature"]) if f >= 0)
    bank["threshold"][i] = float(np.nextafter(np.float32(bank["threshold"][i]), np.float32(np.inf)))
    return ir.from_dict(d)


def test_verify_reports_a_one_ulp_threshold_change(monkeypatch, capsys):
    real = cmod.CRuntime.__init__

    def broken_init(self, model, **kw):
        kw.pop("tables", None)   # verify's lowering is of the true model
        real(self, _flip_first_threshold(model), **kw)
        self.model = model
    monkeypatch.setattr(cmod.CRuntime, "__init__", broken_init)
    rc = main(["verify", f"{EXAMPLES}/trees.json"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "MISMATCH" in out
    # the row one ulp above the true threshold 0.5 (exactly on the broken
    # one) is the one that goes the other way
    assert "decided by {'a': 0.5000000596046448" in out

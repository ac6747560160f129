"""A model whose estimator took an object parameter (a tree bank) still
saves as JSON: the metadata names the object, the nodes hold it."""
import json

from skinflint import datasets, ir
from skinflint.trainers import CSTCClassifier, GreedyMiserClassifier


def test_a_model_trained_on_a_passed_bank_saves_and_loads(tmp_path):
    ds = datasets.load_breast_cancer()
    bank = GreedyMiserClassifier(n_estimators=8, max_depth=2, random_state=0, verbose=0,
                                 feature_costs=ds.costs).fit(ds.X, ds.y).to_ir().nodes[0]
    est = CSTCClassifier(cost_tradeoff=0.003, bank=bank, max_depth=2, random_state=0,
                         feature_costs=ds.costs).fit(ds.X, ds.y)
    ir.save(est.model_, tmp_path / "m.json")
    back = ir.load(tmp_path / "m.json")
    assert ir.to_json(back) == ir.to_json(est.model_)
    params = json.loads(ir.to_json(back))["metadata"]["params"]
    assert params["bank"] == "<trees bank of 8 trees>"
    assert params["feature_costs"]["names"] == list(ds.costs.names)

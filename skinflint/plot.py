"""Pictures people would rather look at than read (needs the ``plot`` extra)."""
from __future__ import annotations

import numpy as np


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'skinflint[plot]'") from None
    return plt


def plot_cost_accuracy(curves: dict, path, title="Accuracy against test-time cost", log_cost=False):
    """``curves``: {label: rows from cost_accuracy_curve (or dicts with
    mean_cost and accuracy)}.  Mean lazy cost per row on x, accuracy on y.
    ``log_cost``: a logarithmic cost axis (linear below 1, so that free
    models still show), for curves whose costs span decades; with more than
    six curves the legend goes beside the plot."""
    plt = _plt()
    many = len(curves) > 6
    fig, ax = plt.subplots(figsize=(9.6 if many else 6.4, 4.8 if many else 4.2), dpi=120)
    markers = "os^vD<>p"   # 8 markers x 10 colours: 40 distinct curves
    for i, (label, rows) in enumerate(curves.items()):
        rows = sorted(rows, key=lambda r: r["mean_cost"])
        ax.plot([r["mean_cost"] for r in rows], [r["accuracy"] for r in rows], "-",
                marker=markers[i % len(markers)], label=label)
    if log_cost:
        ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("mean feature-extraction cost per row (lazy)" + (", log scale" if log_cost else ""))
    ax.set_ylabel("test accuracy")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if many:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    else:
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_feature_costs(model, X, path, top=20):
    """Mean cost per row spent on each feature (its own cost; group costs
    shown as their own bars), from the reference runtime's features_used."""
    from .runtimes.reference import predict
    plt = _plt()
    p = predict(model, X)
    used = p.features_used.mean(axis=0)
    spend = used * model.feature_costs
    labels = [f.name for f in model.features]
    fg = model.feature_groups
    for g, grp in enumerate(model.groups):
        members = p.features_used[:, fg == g]
        if members.size:
            spend = np.append(spend, members.any(axis=1).mean() * grp.cost)
            labels.append(f"[group] {grp.name}")
    order = np.argsort(-spend)[:top]
    order = order[spend[order] > 0]
    fig, ax = plt.subplots(figsize=(6.4, 0.3 * max(len(order), 4) + 1), dpi=120)
    ax.barh([labels[i] for i in order][::-1], spend[order][::-1])
    ax.set_xlabel("mean cost per row")
    ax.set_title(f"Where the cost goes (mean {p.cost.mean():.2f} per row)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path

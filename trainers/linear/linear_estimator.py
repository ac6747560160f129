"""What the linear baselines share: training on standardised features with
the scaling folded back into raw-feature weights, and the one ``linear`` IR
node over the features whose float32 weight is not zero (a feature the node
does not list is never read, hence never paid for).
"""
from __future__ import annotations

import numpy as np

from ... import ir
from ..base import CostSensitiveClassifier


def standardized(X, standardize):
    """The float64 training rows ``Z = (x - mean) * scale`` with the mean and
    scale (1 / std, 0 for a constant feature) of each column; with
    ``standardize=False`` the mean is 0 and the scale 1.  A weight ``w`` on
    ``Z`` is ``w * scale`` on raw features, with ``- (w * scale)' mean`` moved
    into the bias.

    Returns
    -------
    (Z float64 [N, F], mean float64 [F], scale float64 [F])
    """
    X64 = X.astype(np.float64)
    mean = X64.mean(axis=0) if standardize else np.zeros(X.shape[1])
    std = X64.std(axis=0) if standardize else np.ones(X.shape[1])
    scale = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
    return (X64 - mean) * scale, mean, scale


class LinearEstimator(CostSensitiveClassifier):
    """A fitted ``coef_`` [K', F] and ``intercept_`` [K'] on raw features as
    one ``linear`` IR node.  A subclass names the node (``_node_name``), the
    output transforms of a binary and a multiclass task (``_transforms``) and
    the model's extra metadata (``_ir_metadata``)."""

    _allow_missing = False       # a linear model reads every feature it kept: it cannot skip a missing value

    _node_name = "linear"
    _transforms = ("identity", "identity")

    def _ir_metadata(self) -> dict:
        return {}

    def to_ir(self) -> ir.Model:
        """One ``linear`` node over the features with a non-zero float32
        weight: margin = b + sum_f w_f x_f (binary) or one column per class,
        through the estimator's binary or multiclass output transform."""
        if getattr(self, "coef_", None) is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first")
        W = self.coef_.T.astype(np.float32)
        live = np.flatnonzero(np.any(W != 0, axis=1))
        node = ir.linear([int(f) for f in live], W[live].astype(np.float64),
                         self.intercept_.astype(np.float32).astype(np.float64), name=self._node_name)
        classes = self._ir_classes()
        binary, multiclass = self._transforms
        task = (ir.binary_task(classes, binary) if len(classes) == 2
                else ir.multiclass_task(classes, multiclass))
        return self._ir_model([node], 0, task, self._costs, **self._ir_metadata())

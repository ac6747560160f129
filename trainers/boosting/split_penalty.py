"""Which features (and groups) the ensemble has paid for, as split penalties.

Greedy Miser (thesis Eq. 2.5) charges lambda * c_a for a feature a not yet
extracted (u_a = 1).  Groups (descriptors, §2.1.4 Scene-15): the first
feature of a group also pays the group cost; afterwards its siblings cost
only their own c_a.
"""
from __future__ import annotations

import numpy as np


class CostState:
    def __init__(self, feature_costs, feature_groups, group_costs, scale):
        self.c = np.asarray(feature_costs, np.float64)
        self.group = np.asarray(feature_groups, np.int64)
        self.gc = np.asarray(group_costs, np.float64)
        self.scale = float(scale)
        self.paid_f = np.zeros(self.c.shape[0], bool)
        self.paid_g = np.zeros(self.gc.shape[0], bool)

    def penalty(self) -> np.ndarray:
        """lambda-scaled unpaid cost of each feature, its group included."""
        p = np.where(self.paid_f, 0.0, self.c)
        has = self.group >= 0
        gp = np.zeros_like(p)
        gp[has] = np.where(self.paid_g[self.group[has]], 0.0, self.gc[self.group[has]])
        return self.scale * (p + gp)

    def pay(self, f):
        self.paid_f[f] = True
        if self.group[f] >= 0:
            self.paid_g[self.group[f]] = True

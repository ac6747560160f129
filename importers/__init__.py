"""Importers: LightGBM, XGBoost and scikit-learn models as skinflint IR
(docs/importers.md).  The source libraries are imported only when used."""
from .lightgbm import from_lightgbm
from .sklearn import from_sklearn
from .sklearn_json import from_sklearn_json
from .xgboost import from_xgboost

__all__ = ["from_lightgbm", "from_sklearn", "from_sklearn_json", "from_xgboost"]

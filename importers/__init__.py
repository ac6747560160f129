"""Importers: LightGBM, XGBoost and scikit-learn models as skinflint IR."""

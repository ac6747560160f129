"""Sphinx configuration of the API reference (`make docs`, warnings are errors)."""
project = "skinflint"
author = "the skinflint developers"
extensions = ["sphinx.ext.autodoc", "numpydoc"]
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"          # numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
exclude_patterns = ["_build"]
html_theme = "alabaster"
nitpicky = False
suppress_warnings = ["autodoc.import_object"]


def _skip_metadata_requests(app, what, name, obj, skip, options):
    # scikit-learn adds set_fit_request & co. to every estimator; their
    # docstrings point into scikit-learn's own glossary
    return True if name.startswith("set_") and name.endswith("_request") else skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)

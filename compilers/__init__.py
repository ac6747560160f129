"""Compilers from the IR to ONNX (``onnx``) and C (``c``)."""


def package_version() -> str:
    """skinflint's version (defined once, in skinflint/__init__.py, which
    pyproject.toml also reads), stamped into every generated artifact."""
    from skinflint import __version__
    return __version__

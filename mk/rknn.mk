# The RKNN toolchain (rknn-toolkit2, Rockchip's converter and x86 simulator)
# in its own venv: it pins torch<=2.4, numpy<=1.26 and onnx<=1.18, so it can
# never share the main one. The exporter runs it in a subprocess
# (mmrazor_quant/deploy/external_env.py; docs/deploy.md, "RKNN").
#   make rknn-env   build .venv-rknn (49 s and 628 MB measured, from PyPI)
# The toolkit is installed without its dependencies: torch is replaced by an
# import-only stub (mmrazor_quant/deploy/rknn/scripts/torch_stub.py; the QDQ-ONNX
# path never calls torch), the others are pinned below to what it accepts.
RKNN_VENV := .venv-rknn
RKNN_PY := $(RKNN_VENV)/bin/python
RKNN_STAMP := $(RKNN_VENV)/.installed
# rknn-toolkit2 2.5.0 has wheels for CPython 3.8, 3.10, 3.11 and 3.12.
RKNN_PYTHON ?= python3.11
RKNN_TOOLKIT_VERSION := 2.5.0
RKNN_TORCH_STUB := mmrazor_quant/deploy/rknn/scripts/torch_stub.py

.PHONY: rknn-env rknn-env-for-test

rknn-env: $(RKNN_STAMP)

# `make test` builds it first; a machine where it cannot be built (no
# Python 3.11, no PyPI) still runs every other test, and the RKNN tests
# skip saying the venv is missing.
test: rknn-env-for-test

rknn-env-for-test:
	@$(MAKE) --no-print-directory rknn-env || \
	  echo "rknn-env: the build failed (above); the RKNN tests will be skipped"

$(RKNN_STAMP): mk/rknn.mk $(RKNN_TORCH_STUB)
	rm -rf $(RKNN_VENV)
	$(RKNN_PYTHON) -m venv $(RKNN_VENV)
	# Nothing in the venv is project source (git, ruff and pytest skip it).
	echo '*' > $(RKNN_VENV)/.gitignore
	$(RKNN_PY) -m pip install -q --no-deps rknn-toolkit2==$(RKNN_TOOLKIT_VERSION)
	# pip then reports the toolkit's missing torch and opencv-python (the
	# stub and opencv-python-headless stand in for them): harmless.
	$(RKNN_PY) -m pip install -q numpy==1.26.4 onnx==1.18.0 \
	  protobuf==4.25.4 onnxruntime==1.26.0 psutil==7.2.2 ruamel.yaml==0.19.1 \
	  scipy==1.17.1 tqdm==4.70.1 fast-histogram==0.14 \
	  opencv-python-headless==4.11.0.86
	mkdir -p $$($(RKNN_PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/torch
	cp $(RKNN_TORCH_STUB) $$($(RKNN_PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/torch/__init__.py
	$(RKNN_PY) -c "from rknn.api import RKNN; RKNN(verbose=False).release()"
	touch $(RKNN_STAMP)

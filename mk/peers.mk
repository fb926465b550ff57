# The peers of benchmarks/peers.py (NNCF, torchao's PT2E, PPQ) in their own
# venv, so that their pins never touch the main one.
#   make peers-env   build .venv-peers: a venv that sees the main venv's
#                    packages (a .pth file) and installs the peers over them;
#                    whatever a peer pins lands in .venv-peers only.
#   make peers       run the benchmark (docs/benchmarks.md).
# PPQ is installed without its dependencies (it pins old torch/onnx); where
# its import or export fails, the benchmark prints that as the peer's row.
PEERS_VENV := .venv-peers
PEERS_PY := $(PEERS_VENV)/bin/python
PEERS_STAMP := $(PEERS_VENV)/.installed
NNCF_VERSION := 3.4.0
TORCHAO_VERSION := 0.18.0
PPQ_VERSION := 0.6.6
PEERS_ARGS ?=

.PHONY: peers-env peers

peers-env: $(PEERS_STAMP)

$(PEERS_STAMP): $(STAMP) mk/peers.mk
	$(PYTHON) -m venv $(PEERS_VENV)
	$(abspath $(PY)) -c "import site; print(site.getsitepackages()[0])" \
	  > $$($(PEERS_PY) -c "import site; print(site.getsitepackages()[0])")/main-venv.pth
	$(PEERS_PY) -m pip install -q "setuptools<81" wheel
	# Keep torch and OpenVINO at the main venv's versions: the benchmark runs
	# ours and the peers in one process on one runtime.
	$(PEERS_PY) -m pip install -q nncf==$(NNCF_VERSION) torchao==$(TORCHAO_VERSION) \
	  torch==$(TORCH_VERSION) $$($(abspath $(PY)) -m pip freeze | grep -i '^openvino==')
	-$(PEERS_PY) -m pip install -q --no-deps ppq==$(PPQ_VERSION) tqdm
	touch $(PEERS_STAMP)

peers: $(PEERS_STAMP)
	# The editable install of the main venv is a .pth file there, which the
	# peers venv does not process: the package comes from the checkout.
	PYTHONPATH=$(CURDIR) $(PEERS_PY) benchmarks/peers.py $(PEERS_ARGS)

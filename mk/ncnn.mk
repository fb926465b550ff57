# ncnn for the ncnn backend (docs/deploy.md): the runtime wheel only, in the
# main venv. --no-deps: its requirements (requests, tqdm, portalocker,
# opencv) serve ncnn's model zoo downloads, which the runtime never needs;
# so nothing the venv has moves.
#   make ncnn       install it (about 3 s, 28 MB; docs/deploy.md)
NCNN_STAMP := $(VENV)/.ncnn-installed
NCNN_PACKAGES := ncnn==1.0.20261020

.PHONY: ncnn

ncnn: $(NCNN_STAMP)

$(NCNN_STAMP): $(STAMP) mk/ncnn.mk
	$(PIP) install -q --no-deps $(NCNN_PACKAGES)
	touch $(NCNN_STAMP)

# The ncnn tests run in both tiers.
test test-fast: ncnn

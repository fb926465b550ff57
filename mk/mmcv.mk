# Full mmcv (with its CPU ops, which mmdet's NMS needs) for the pinned stack.
# mmcv has no CPU wheel for torch 2.13 on the package index, so a machine
# builds it once from the sdist and caches the wheel in $(MMCV_CACHE); a
# prebuilt wheel in ../shared/wheels is used instead where that folder exists.
#   make mmcv        install mmcv $(MMCV_VERSION) into the venv (building the
#                    wheel first when neither the cache nor ../shared has it)
#   make mmcv-wheel  only build (or find) the wheel
MMCV_VERSION := 2.0.1
TORCH_VERSION := 2.13.0
MMCV_CACHE := $(HOME)/.cache/mmrazor_quant/mmcv-$(MMCV_VERSION)_torch-$(TORCH_VERSION)
SHARED_WHEELS := ../shared/wheels
# Expanded when a recipe runs (after mmcv-wheel may have made the cache), and
# only for folders that exist: pip warns about every missing --find-links.
MMCV_FIND_LINKS = $(shell test -d $(MMCV_CACHE) && echo --find-links $(MMCV_CACHE)) \
	$(if $(wildcard $(SHARED_WHEELS)),--find-links $(SHARED_WHEELS))
MMCV_JOBS ?= 2

.PHONY: mmcv mmcv-wheel

mmcv-wheel:
	@if ls $(MMCV_CACHE)/mmcv-$(MMCV_VERSION)-*.whl >/dev/null 2>&1 || \
	   ls $(SHARED_WHEELS)/mmcv-$(MMCV_VERSION)-*.whl >/dev/null 2>&1; then \
	  echo "mmcv-wheel: using a prebuilt mmcv $(MMCV_VERSION) wheel"; \
	else \
	  echo "mmcv-wheel: building mmcv $(MMCV_VERSION) from source once (~15 min on 2 cores) into $(MMCV_CACHE)"; \
	  set -e; src=$$(mktemp -d); \
	  $(PIP) download -q --no-deps --no-build-isolation --no-binary :all: mmcv==$(MMCV_VERSION) -d $$src; \
	  tar xzf $$src/mmcv-$(MMCV_VERSION).tar.gz -C $$src; \
	  sed -i 's/-std=c++14/-std=c++17/g' $$src/mmcv-$(MMCV_VERSION)/setup.py; \
	  mkdir -p $(MMCV_CACHE); \
	  cd $$src/mmcv-$(MMCV_VERSION) && MMCV_WITH_OPS=1 MAX_JOBS=$(MMCV_JOBS) \
	    $(abspath $(PY)) -m pip wheel -q --no-deps --no-build-isolation -w $(MMCV_CACHE) .; \
	  rm -rf $$src; \
	fi

# mmcv-lite and mmcv install the same package directory: remove lite first.
mmcv: mmcv-wheel
	$(PIP) uninstall -q -y mmcv-lite 2>/dev/null || true
	$(PIP) install -q --only-binary mmcv $(MMCV_FIND_LINKS) \
	  $$(test -f $(VENV)/constraints.txt && echo -c $(VENV)/constraints.txt) \
	  mmcv==$(MMCV_VERSION)

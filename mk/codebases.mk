# The other OpenMMLab codebases (mmsegmentation, mmpose, mmyolo, mmpretrain)
# in the main venv, next to mmcls and mmdet: they import together in one
# process and none pins torch, numpy or mmcv outside its `mim` extra.
#   make codebases   install them (mk/codebases.sh; run by `make venv`)
# Their three problem dependencies (chumpy, xtcocotools, torchvision) are
# explained in mk/codebases.sh and docs/get_started.md; the two wheels it
# builds are cached in $(CODEBASES_CACHE).
CODEBASES_STAMP := $(VENV)/.codebases
# Recursive: TORCH_VERSION and SHARED_WHEELS come from mk/mmcv.mk.
CODEBASES_CACHE = $(HOME)/.cache/mmrazor_quant/codebases_torch-$(TORCH_VERSION)

.PHONY: codebases

codebases: $(CODEBASES_STAMP)

# A venv made before the codebases joined the stack gets them on first use.
test test-fast demo: $(CODEBASES_STAMP)

$(CODEBASES_STAMP): mk/codebases.sh
	bash mk/codebases.sh $(abspath $(PY)) $(CODEBASES_CACHE) $(SHARED_WHEELS)
	touch $(CODEBASES_STAMP)

# The real trained models of the slow tests and benchmarks/onnx_models.py
# (docs/onnx_models.md, "Real models"), all from package registries:
#   make real-models   install, where missing:
#     - rapidocr-onnxruntime (PP-OCRv4 text detector and recogniser ONNX
#       files, rapidocr's pre/post-processing); its dependencies (pyclipper,
#       six, tqdm) move no package of the venv;
#     - facenet-pytorch (MTCNN's P/R/O-Nets with trained weights) without
#       its dependencies: it pins torch < 2.3 and numpy < 2, while the nets
#       run on ours; requests is what its package import needs;
#     - scikit-image without its dependencies: only its data files are read
#       (lfw_subset.npy, 100 faces and 100 non-faces from LFW);
#     - the fonts the words and pages are rendered with (Debian's
#       fonts-dejavu-core and fonts-liberation; as root with apt-get,
#       otherwise the OCR tests skip and say so).
# Run by `make test` and `make test-fast` on first use.
RAPIDOCR_VERSION := 1.4.4
FACENET_VERSION := 2.6.0
SKIMAGE_VERSION := 0.26.0
REAL_MODELS_STAMP := $(VENV)/.real-models
REAL_MODELS_FONTS := fonts-dejavu-core fonts-liberation

.PHONY: real-models

real-models: $(REAL_MODELS_STAMP)

test test-fast: $(REAL_MODELS_STAMP)

$(REAL_MODELS_STAMP): mk/real_models.mk
	$(PIP) install -q -c $(VENV)/constraints.txt \
	  rapidocr-onnxruntime==$(RAPIDOCR_VERSION) requests
	$(PIP) install -q --no-deps facenet-pytorch==$(FACENET_VERSION) \
	  scikit-image==$(SKIMAGE_VERSION)
	@if [ -f /usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf ] && \
	    [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then \
	  echo "real-models: fonts present"; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "real-models: no root/apt-get for $(REAL_MODELS_FONTS); the OCR tests will be skipped"; \
	else \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q >/dev/null && \
	  apt-get install -y -q --no-install-recommends $(REAL_MODELS_FONTS) >/dev/null || \
	  echo "real-models: apt-get failed; the OCR tests will be skipped"; \
	fi
	touch $(REAL_MODELS_STAMP)

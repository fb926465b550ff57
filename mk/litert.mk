# LiteRT (TFLite) for the litert backend (docs/deploy.md): the interpreter
# (ai-edge-litert, with a cp311 wheel), the flatbuffer schema the exporter
# writes the .tflite with (tflite) and flatbuffers, in the main venv. They
# pull in nothing the venv has at another version; the constraints file pins
# torch and numpy to the installed ones, so pip fails rather than move them.
#   make litert       install them (a few seconds; docs/deploy.md)
LITERT_STAMP := $(VENV)/.litert-installed
LITERT_PACKAGES := ai-edge-litert==2.3.0 tflite==2.18.0 flatbuffers==25.12.19

.PHONY: litert

litert: $(LITERT_STAMP)

$(LITERT_STAMP): $(STAMP) mk/litert.mk
	$(PIP) freeze | grep -i -E '^(torch|numpy)==' > $(VENV)/litert-constraints.txt
	$(PIP) install -q -c $(VENV)/litert-constraints.txt $(LITERT_PACKAGES)
	touch $(LITERT_STAMP)

# The LiteRT tests run in both tiers.
test test-fast: litert

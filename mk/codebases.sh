#!/usr/bin/env bash
# Installs mmsegmentation, mmpose, mmyolo and mmpretrain into a venv that
# already holds the pinned stack (torch 2.13 CPU, numpy 2, mmcv 2.0.1,
# mmengine 0.10.7, mmdet 3.0.0), without letting pip touch that stack.
#
#   mk/codebases.sh PYTHON CACHE_DIR [WHEEL_DIR ...]
#
# Three declared dependencies cannot be installed as published
# (docs/get_started.md has the error texts):
# - chumpy (mmpose): fails to import on Python 3.11 and numpy 2, and no
#   mmpose module imports it: left out.
# - xtcocotools (mmpose's keypoint COCOeval): its only cp311 wheel is built
#   against numpy 1; built here from the sdist against the installed numpy.
# - torchvision (imported by mmpretrain.models and mmpose.visualization):
#   the 0.28.0 wheel for torch 2.13 is a CUDA build whose C++ ops cannot load
#   with the CPU torch; repacked here as pure Python (no ops: nothing on our
#   path calls torchvision.ops.nms).
# Both built wheels are cached in CACHE_DIR; a WHEEL_DIR holding them is
# used instead of building.
set -euo pipefail
PY=$1; CACHE=$2; shift 2
PIP="$PY -m pip"
XTCOCO=1.14.3
TORCHVISION=0.28.0
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

NUMPY=$($PY -c 'import numpy; print(numpy.__version__)')
TORCH=$($PY -c 'import torch; print(torch.__version__.split("+")[0])')
printf 'torch==%s\nnumpy==%s\nmmcv==2.0.1\nmmengine==0.10.7\nsetuptools<81\n' \
  "$TORCH" "$NUMPY" > "$WORK/constraints.txt"
C="-c $WORK/constraints.txt"

# A cached or shared wheel matching PATTERN, else empty.
find_wheel() {
  local dir found
  for dir in "$CACHE" "$@"; do
    found=$(ls "$dir"/$PATTERN 2>/dev/null | head -n 1)
    if [ -n "$found" ]; then echo "$found"; return 0; fi
  done
}

build_xtcocotools() {
  $PIP install -q $C Cython==3.3.1
  $PIP download -q --no-deps --no-binary :all: "xtcocotools==$XTCOCO" -d "$WORK"
  tar xzf "$WORK/xtcocotools-$XTCOCO.tar.gz" -C "$WORK"
  local src="$WORK/xtcocotools-$XTCOCO"
  # numpy 2's Cython declarations dropped the NPY_OWNDATA alias.
  sed -i 's/np\.NPY_OWNDATA/np.NPY_ARRAY_OWNDATA/g' "$src/xtcocotools/_mask.pyx"
  rm -f "$src/xtcocotools/_mask.c"
  $PIP wheel -q --no-deps --no-build-isolation -w "$CACHE" "$src"
}

repack_torchvision() {
  $PIP download -q --no-deps "torchvision==$TORCHVISION" -d "$WORK/tv"
  local tree="$WORK/tvx"
  mkdir "$tree"
  (cd "$tree" && $PY -m zipfile -e "$WORK"/tv/torchvision-*.whl .)
  # Without its ops these two fake registrations fail the import.
  sed -i 's/^@torch.library.register_fake("torchvision::\(q\?nms\)")/@(torch.library.register_fake("torchvision::\1") if torchvision.extension._has_ops() else (lambda f: f))/' \
    "$tree/torchvision/_meta_registrations.py"
  rm -rf "$tree/torchvision/_C.so" "$tree/torchvision/image.so" "$tree/torchvision.libs"
  sed -i '/^torchvision\/_C.so\|^torchvision\/image.so\|^torchvision.libs\//d' \
    "$tree"/torchvision-*.dist-info/RECORD
  $PY -m wheel pack "$tree" -d "$CACHE" >/dev/null
}

mkdir -p "$CACHE"
# First the codebases' dependencies that install as published (pure
# Python), then the four codebases without their declared dependencies. In
# this order no install with dependency checks runs while mmpose lacks chumpy,
# so pip prints no resolver error (`pip check` still names chumpy).
$PIP install -q $C ftfy==6.3.1 regex==2026.11.19 prettytable==3.18.0 \
  json_tricks==3.17.3 munkres==3.0.0 einops==0.8.2 \
  importlib-metadata==10.2.0 mat4py==0.6.0 wheel
$PIP install -q --no-deps $C mmsegmentation==1.2.2 mmpose==1.3.2 \
  mmyolo==0.6.0 mmpretrain==1.2.0

PATTERN="xtcocotools-$XTCOCO-*.whl"
wheel=$(find_wheel "$@")
if [ -z "$wheel" ]; then build_xtcocotools; wheel=$(find_wheel); fi
$PIP install -q --no-deps "$wheel"

PATTERN="torchvision-$TORCHVISION-*.whl"
wheel=$(find_wheel "$@")
if [ -z "$wheel" ]; then repack_torchvision; wheel=$(find_wheel); fi
# Forced: the `onnx` extra (onnx2torch) already installed the published
# 0.28.0, and pip would keep it as the same version.
$PIP install -q --no-deps --force-reinstall "$wheel"

$PY -c "import mmseg, mmpose, mmyolo, mmpretrain, torchvision, xtcocotools.mask; \
print('codebases: mmseg', mmseg.__version__, 'mmpose', mmpose.__version__, \
'mmyolo', mmyolo.__version__, 'mmpretrain', mmpretrain.__version__, \
'torchvision', torchvision.__version__, '(no C++ ops)')"

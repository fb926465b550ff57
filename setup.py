"""Install mmrazor_quant into your own environment (pip + extras).

``install_requires`` holds what the package needs in every use (build a
quantized model from a config, calibrate, train, export to ONNX), as version
ranges; each OpenMMLab codebase and each deploy runtime is an extra. The
exact versions the project tests with live in ``constraints.txt``, which
``make venv`` installs with (docs/get_started.md).

Both ends of each range resolve on the package index
(``pip install --dry-run --no-deps``, docs/get_started.md lists them); the
suite runs at the pins of ``constraints.txt``.
"""
import re
from setuptools import find_namespace_packages, setup


def _version() -> str:
    """``__version__`` of ``mmrazor_quant/__init__.py`` (not imported: it
    would need the dependencies)."""
    with open('mmrazor_quant/__init__.py', encoding='utf-8') as f:
        return re.search(r"^__version__ = '([^']+)'", f.read(), re.M)[1]


INSTALL_REQUIRES = [
    # torch >= 2.6: checkpoints load with weights_only=True (safe globals).
    'torch>=2.6,<2.15',
    'mmengine>=0.10.0,<0.11',
    'numpy>=2,<3',
    # The QDQ ONNX export (torch.onnx's dynamo exporter needs onnxscript).
    'onnx>=1.17,<2',
    'onnxscript>=0.3,<1',
    # mmengine 0.10 imports pkg_resources, which setuptools 81 removes.
    'setuptools<81',
    'matplotlib>=3.5',
]

# mmcv: the codebases import it without declaring it (mim installs it);
# mmcls 1.0.0rc6 and mmyolo 0.6 accept mmcv < 2.1, the others < 2.2.
_MMCV = 'mmcv>=2.0.0,<2.2'
_MMCV_20 = 'mmcv>=2.0.0,<2.1'
CODEBASE_EXTRAS = {
    'mmcls': ['mmcls>=1.0.0rc6,<1.1', _MMCV_20],
    # PAA's head imports sklearn.mixture without declaring it.
    'mmdet': ['mmdet>=3.0.0,<3.4', _MMCV, 'scikit-learn>=1.3'],
    # mmseg.utils imports ftfy and regex without declaring them.
    'mmseg': ['mmsegmentation>=1.2.0,<1.3', _MMCV, 'ftfy', 'regex'],
    'mmpose': ['mmpose>=1.3.0,<1.4', _MMCV],
    'mmyolo': ['mmyolo>=0.6.0,<0.7', 'mmdet>=3.0.0,<3.4', _MMCV_20],
    'mmpretrain': ['mmpretrain>=1.2.0,<1.3', _MMCV],
}
RUNTIME_EXTRAS = {
    'onnxruntime': ['onnxruntime>=1.17,<2'],
    'openvino': ['openvino>=2024.0,<2027'],
    'litert': [
        'ai-edge-litert>=2.0.2,<3', 'tflite>=2.18,<3', 'flatbuffers>=24.3.6'
    ],
}
EXTRAS_REQUIRE = {
    **CODEBASE_EXTRAS,
    **RUNTIME_EXTRAS,
    # TensorRT's int8 graphs are checked in onnxruntime (docs/deploy.md).
    'tensorrt': RUNTIME_EXTRAS['onnxruntime'],
    # ONNX files in (docs/onnx_models.md)
    'onnx': ['onnx2torch>=1.5.15,<1.6'],
    # build: tests/test_packaging.py builds the wheel as a user would.
    'tests': [
        'pytest', 'pytest-timeout', 'pytest-xdist', 'ruff==0.17.6', 'build'
    ],
}
EXTRAS_REQUIRE['all'] = sorted(
    {r for extras in (CODEBASE_EXTRAS, RUNTIME_EXTRAS)
     for reqs in extras.values() for r in reqs})

setup(
    name='mmrazor_quant',
    version=_version(),
    description='Config-driven PTQ/QAT toolkit on torch.fx in the style of '
    'MMRazor',
    # Namespace-aware: a subpackage without __init__.py (quantizers/passes)
    # ships too.
    packages=find_namespace_packages(
        include=['mmrazor_quant', 'mmrazor_quant.*'],
        # scripts run by another venv's Python ship as package data
        exclude=['*.__pycache__', 'mmrazor_quant.deploy.rknn.scripts']),
    python_requires='>=3.10',
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    include_package_data=True,
    # scripts run by another venv's Python (not modules of the package)
    package_data={'mmrazor_quant.deploy.rknn': ['scripts/*.py']},
)

"""Install mmrazor_quant with the pinned stack (see docs/get_started.md)."""
from setuptools import find_packages, setup

# Pinned: an unpinned torch pulls several GB of CUDA packages; mmcls 1.0.0rc6
# needs mmcv < 2.1; full mmcv (not mmcv-lite) because mmdet needs mmcv.ops --
# the Makefile installs it first from a wheel built once per machine
# (mk/mmcv.mk); mmengine 0.10.7 needs pkg_resources (setuptools < 81).
INSTALL_REQUIRES = [
    'torch==2.13.0',
    'mmengine==0.10.7',
    'mmcv==2.0.1',
    'mmcls==1.0.0rc6',
    'mmdet==3.0.0',
    'pycocotools==2.0.11',
    'scipy==1.17.1',
    'shapely==2.2.0',
    'six==1.17.0',
    'terminaltables==3.1.10',
    'onnx==1.23.2',
    'onnxruntime==1.31.1',
    'onnxscript==0.7.2',
    'openvino==2026.4.1',
    'numpy>=2,<3',
    'setuptools<81',
    'matplotlib',
]

EXTRAS_REQUIRE = {
    'tests': ['pytest', 'pytest-timeout', 'pytest-xdist', 'ruff==0.17.6'],
}

setup(
    name='mmrazor_quant',
    version='0.1.0',
    description='Config-driven PTQ/QAT toolkit on torch.fx in the style of '
    'MMRazor',
    packages=find_packages(exclude=('tests', 'tests.*')),
    python_requires='>=3.10',
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    include_package_data=True,
    # scripts run by another venv's Python (not modules of the package)
    package_data={'mmrazor_quant.deploy.rknn': ['scripts/*.py']},
)

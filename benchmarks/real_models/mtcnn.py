"""MTCNN's ONet from facenet-pytorch: a plain torch module with real weights.

``facenet-pytorch==2.6.0`` ships the trained P/R/O-Nets of MTCNN inside
the wheel (``facenet_pytorch/data/onet.pt``); ``ONet()`` loads them. ONet
takes a 48x48 RGB crop normalised as MTCNN does (``(x - 127.5) / 128``) and
returns box offsets (4), five landmarks (10) and face / not-face
probabilities (2).

The faces come from ``lfw_subset.npy``, shipped inside scikit-image 0.26.0
(only the file is read, the package is never imported): 200 grey 25x25
crops from Labeled Faces in the Wild, the first 100 faces and the rest
not. Grey is repeated into three channels and the crops resized to 48x48.
Even rows calibrate, odd rows evaluate (50 faces, 50 not).

Metrics against the labels and against fp32: face accuracy at a 0.5
threshold, and the SQNR (dB) of each output.
"""
import importlib.util
import os.path as osp
from typing import Dict, Optional, Tuple

import numpy as np

from .ocr import map_sqnr

FACENET_PIN = 'facenet-pytorch==2.6.0'
SKIMAGE_PIN = 'scikit-image==0.26.0'
CROP = 48
OUTPUT_NAMES = ('boxes', 'landmarks', 'face_prob')

__all__ = [
    'missing_reason', 'onet', 'lfw_crops', 'face_accuracy', 'output_sqnr'
]


def _package_dir(name: str) -> Optional[str]:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def missing_reason() -> Optional[str]:
    """Why the net or its data is not here, or None if both are."""
    if _package_dir('facenet_pytorch') is None:
        return (f'MTCNN\'s ONet comes from {FACENET_PIN}, which is not '
                'installed (make real-models)')
    skimage = _package_dir('skimage')
    if skimage is None or not osp.isfile(
            osp.join(skimage, 'data', 'lfw_subset.npy')):
        return (f'the LFW crops come from {SKIMAGE_PIN} (its data files '
                'only), which is not installed (make real-models)')
    return None


def onet():
    """facenet-pytorch's ONet with its trained weights, in eval mode."""
    from facenet_pytorch import ONet
    return ONet(pretrained=True).eval()


def lfw_crops(split: str) -> Tuple[np.ndarray, np.ndarray]:
    """``(N, 3, 48, 48)`` float32 inputs as MTCNN normalises them, and the
    labels (1 face, 0 not); ``split`` is ``'calib'`` (even rows) or
    ``'eval'`` (odd rows)."""
    import cv2
    path = osp.join(_package_dir('skimage'), 'data', 'lfw_subset.npy')
    grey = np.load(path)  # (200, 25, 25) float64 in [0, 1]
    labels = (np.arange(len(grey)) < len(grey) // 2).astype(np.int64)
    rows = {'calib': slice(0, None, 2), 'eval': slice(1, None, 2)}[split]
    crops = np.stack([
        cv2.resize((g * 255).astype(np.float32), (CROP, CROP),
                   interpolation=cv2.INTER_LINEAR) for g in grey[rows]
    ])
    crops = np.repeat(crops[:, None], 3, axis=1)
    return ((crops - 127.5) * 0.0078125).astype(np.float32), labels[rows]


def face_accuracy(face_prob: np.ndarray, labels: np.ndarray) -> float:
    """Percent of crops whose face probability is on the label's side of
    0.5."""
    return 100.0 * float(np.mean((face_prob[:, 1] > 0.5) == labels))


def output_sqnr(reference: Dict[str, np.ndarray],
                other: Dict[str, np.ndarray]) -> Dict[str, float]:
    """SQNR (dB) of each output of ``other`` against ``reference``."""
    return {name: map_sqnr(ref, other[name])
            for name, ref in reference.items()}

"""PP-OCRv4 text detector and recogniser from the rapidocr-onnxruntime wheel.

The wheel (``rapidocr-onnxruntime==1.4.4``, ``make real-models``) ships both
ONNX files with their trained weights, and rapidocr's own preprocessing
(``TextRecognizer.resize_norm_img``, ``DetPreProcess``) and decoding
(``CTCLabelDecode``, ``DBPostProcess``), which this harness uses as they
are. The words and pages are rendered here with PIL from the fonts of the
Debian packages ``fonts-dejavu-core`` and ``fonts-liberation``, seeded, so
every machine with those packages gets the same pixels.

Metrics:

* recogniser: word accuracy, the share of words whose CTC-decoded text is
  exactly the rendered one;
* detector: SQNR (dB) of the probability map against fp32's, over all
  pages, and the mean IoU of fp32's boxes with their best match among the
  quantized model's boxes (axis-aligned hulls of rapidocr's quadrilaterals).
"""
import importlib.util
import os.path as osp
from types import SimpleNamespace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from mmrazor_quant.utils.sqnr import sqnr_db

RAPIDOCR_PIN = 'rapidocr-onnxruntime==1.4.4'
DET_FILE = 'ch_PP-OCRv4_det_infer.onnx'
REC_FILE = 'ch_PP-OCRv4_rec_infer.onnx'
FONT_DIRS = ('/usr/share/fonts/truetype/dejavu',
             '/usr/share/fonts/truetype/liberation')
FONT_FILES = ('DejaVuSans.ttf', 'DejaVuSerif.ttf', 'DejaVuSansMono.ttf',
              'DejaVuSans-Bold.ttf', 'LiberationSans-Regular.ttf',
              'LiberationSerif-Regular.ttf', 'LiberationMono-Regular.ttf',
              'LiberationSans-Bold.ttf')
# Only glyphs no font draws alike: not l/I/1 nor O/0, and no letter whose
# two cases differ only in size (c/C, k/K, s/S, w/W, ...), which would make
# fp32 itself wrong on a cropped word.
WORD_CHARS = 'abdefghimnqrtABDEFGHLMNQRT23456789'
REC_SHAPE = (3, 48, 320)
DET_SIZE = 640
DET_MEAN, DET_STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)

Runner = Callable[[np.ndarray], np.ndarray]

__all__ = [
    'RAPIDOCR_PIN', 'missing_reason', 'model_paths', 'render_words',
    'render_pages', 'rec_inputs', 'det_inputs', 'CtcDecoder', 'word_accuracy',
    'det_boxes', 'map_sqnr', 'box_iou'
]


def missing_reason() -> Optional[str]:
    """Why the OCR models or fonts are not here, or None if they are."""
    if importlib.util.find_spec('rapidocr_onnxruntime') is None:
        return (f'the PP-OCRv4 models come from the {RAPIDOCR_PIN} wheel, '
                'which is not installed (make real-models)')
    missing = [f for f in FONT_FILES if _font_path(f) is None]
    if missing:
        return (f'fonts {missing} are missing: apt-get install '
                'fonts-dejavu-core fonts-liberation (make real-models)')
    return None


def model_paths() -> Dict[str, str]:
    """The detector's and recogniser's ONNX files inside the wheel."""
    spec = importlib.util.find_spec('rapidocr_onnxruntime')
    if spec is None:
        raise FileNotFoundError(missing_reason())
    root = osp.join(list(spec.submodule_search_locations)[0], 'models')
    return dict(det=osp.join(root, DET_FILE), rec=osp.join(root, REC_FILE))


def prepared_model(path: str, out: str, opset: int = 13) -> str:
    """The fp32 file every contender gets: Paddle2ONNX writes the weights
    as ``Constant`` nodes, which onnxruntime's ``quantize_static`` and NNCF
    would take for activations, so they become initializers; opset 12 is
    converted to ``opset`` (NNCF quantizes weights per channel from 13 on).
    Returns ``out``."""
    import onnx
    from onnx import numpy_helper, version_converter
    model = onnx.load(path)
    graph, keep, constants = model.graph, [], {}
    for node in graph.node:
        if node.op_type == 'Constant' and node.attribute[0].name == 'value':
            constants[node.output[0]] = numpy_helper.to_array(
                node.attribute[0].t)
        elif node.op_type == 'Cast' and node.input[0] in constants:
            # folded: NNCF's Cast pass cannot read an initializer's type
            to = onnx.helper.tensor_dtype_to_np_dtype(node.attribute[0].i)
            constants[node.output[0]] = constants[node.input[0]].astype(to)
        else:
            keep.append(node)
    used = {name for node in keep for name in node.input}
    graph.initializer.extend(
        numpy_helper.from_array(array, name)
        for name, array in constants.items() if name in used)
    del graph.node[:]
    graph.node.extend(keep)
    if opset > model.opset_import[0].version:
        model = version_converter.convert_version(model, opset)
    onnx.checker.check_model(model)
    onnx.save(model, out)
    return out


def _font_path(name: str) -> Optional[str]:
    for folder in FONT_DIRS:
        if osp.isfile(osp.join(folder, name)):
            return osp.join(folder, name)
    return None


def _font(rng: np.random.Generator, size: int):
    from PIL import ImageFont
    name = FONT_FILES[rng.integers(len(FONT_FILES))]
    return ImageFont.truetype(_font_path(name), size)


def random_word(rng: np.random.Generator) -> str:
    """A word of 3 to 9 distinguishable letters and digits."""
    length = int(rng.integers(3, 10))
    return ''.join(WORD_CHARS[i]
                   for i in rng.integers(len(WORD_CHARS), size=length))


# rendering -------------------------------------------------------------------


def render_words(n: int, seed: int) -> Tuple[List[np.ndarray], List[str]]:
    """``n`` word crops (BGR uint8, as rapidocr gets them from OpenCV) and
    their texts: dark text on a light background, one of eight fonts at
    26-36 px, a small random margin."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    images, words = [], []
    for _ in range(n):
        word = random_word(rng)
        font = _font(rng, int(rng.integers(26, 37)))
        left, top, right, bottom = font.getbbox(word)
        pad = rng.integers(3, 9, size=4)
        size = (right - left + pad[0] + pad[1], bottom - top + pad[2] + pad[3])
        background = int(rng.integers(200, 256))
        image = Image.new('RGB', size, (background, ) * 3)
        ink = tuple(int(v) for v in rng.integers(0, 70, size=3))
        ImageDraw.Draw(image).text((pad[0] - left, pad[2] - top), word,
                                   font=font, fill=ink)
        images.append(np.ascontiguousarray(np.asarray(image)[..., ::-1]))
        words.append(word)
    return images, words


def render_pages(n: int, seed: int,
                 size: int = DET_SIZE) -> Tuple[List[np.ndarray], list]:
    """``n`` pages (BGR uint8, ``size`` square) of 6-12 lines of words, and
    each page's text boxes ``(x0, y0, x1, y1)`` as PIL drew them."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    pages, boxes = [], []
    for _ in range(n):
        paper = (int(rng.integers(215, 256)), ) * 3
        image = Image.new('RGB', (size, size), paper)
        draw = ImageDraw.Draw(image)
        page_boxes, y = [], int(rng.integers(10, 40))
        while y < size - 60:
            font = _font(rng, int(rng.integers(18, 41)))
            line = ' '.join(random_word(rng)
                            for _ in range(int(rng.integers(1, 5))))
            x = int(rng.integers(10, size // 3))
            ink = tuple(int(v) for v in rng.integers(0, 80, size=3))
            draw.text((x, y), line, font=font, fill=ink)
            x0, y0, x1, y1 = draw.textbbox((x, y), line, font=font)
            if x1 < size - 5:
                page_boxes.append((x0, y0, x1, y1))
            else:  # ran off the page: paint it out, it is not a box
                draw.rectangle((x0, y0, size, y1), fill=image.getpixel((0, 0)))
            y = y1 + int(rng.integers(12, 40))
        pages.append(np.ascontiguousarray(np.asarray(image)[..., ::-1]))
        boxes.append(page_boxes)
    return pages, boxes


# rapidocr's preprocessing ----------------------------------------------------


def rec_inputs(images: Sequence[np.ndarray]) -> np.ndarray:
    """(N, 3, 48, 320) float32 with rapidocr's ``resize_norm_img`` at its
    configured ratio 320 / 48 (one static shape for every word)."""
    from rapidocr_onnxruntime.ch_ppocr_rec.text_recognize import TextRecognizer
    owner = SimpleNamespace(rec_image_shape=list(REC_SHAPE))
    ratio = REC_SHAPE[2] / REC_SHAPE[1]
    return np.stack([
        TextRecognizer.resize_norm_img(owner, image, ratio)
        for image in images
    ]).astype(np.float32)


def det_inputs(pages: Sequence[np.ndarray]) -> np.ndarray:
    """(N, 3, S, S) float32 with rapidocr's ``DetPreProcess`` (its mean and
    std; the side limit set to the page size, so no resize)."""
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess
    pre = DetPreProcess(DET_SIZE, 'min', list(DET_MEAN), list(DET_STD))
    return np.concatenate([pre(page) for page in pages]).astype(np.float32)


# rapidocr's decoding and the metrics -----------------------------------------


class CtcDecoder:
    """rapidocr's ``CTCLabelDecode`` with the character list stored in the
    recogniser's own metadata (as rapidocr reads it)."""

    def __init__(self, rec_path: str) -> None:
        import onnx
        from rapidocr_onnxruntime.ch_ppocr_rec.utils import CTCLabelDecode
        meta = {
            p.key: p.value
            for p in onnx.load(rec_path, load_external_data=False)
            .metadata_props
        }
        self.decode = CTCLabelDecode(character=meta['character'].splitlines())

    def __call__(self, logits: np.ndarray) -> List[str]:
        return [text for text, _ in self.decode(logits)]


def run_batched(runner: Runner, inputs: np.ndarray,
                batch: int = 1) -> np.ndarray:
    return np.concatenate([
        runner(inputs[i:i + batch]) for i in range(0, len(inputs), batch)
    ])


def ctc_frames(sims: list, outs: list):
    """Parity summary of a CTC recogniser's ``(N, T, C)`` probabilities:
    the share of the N x T frames whose most likely character the runtime
    keeps (``fraction``), and the SQNR over those frames
    (``details['sqnr_db_kept_frames']``).

    Where a character's peak lies on two neighbouring frames at nearly the
    same probability, a last-bit difference moves it one frame: two
    frames then differ by about 1 each, which caps the SQNR of the whole
    output near 20 dB while the decoded word stays the same. The frames
    that keep their character say whether the runtime computes what the
    simulation does.
    """
    from mmrazor_quant.deploy.parity import Agreement
    from mmrazor_quant.utils.sqnr import sqnr_db
    ref, act = sims[0].double(), outs[0].double()
    kept = ref.argmax(-1) == act.argmax(-1)
    return Agreement(
        float(kept.double().mean()), 'CTC frame',
        details=dict(sqnr_db_kept_frames=sqnr_db(ref[kept].numpy(),
                                                 act[kept].numpy()),
                     frames_moved=int((~kept).sum())))


def word_accuracy(texts: Sequence[str], words: Sequence[str]) -> float:
    """Percent of words read exactly (spaces the decoder puts around or
    inside a one-word crop are dropped: the words have none)."""
    return 100.0 * float(
        np.mean([t.replace(' ', '') == w for t, w in zip(texts, words)]))


def det_boxes(prob_map: np.ndarray) -> np.ndarray:
    """Axis-aligned boxes (x0, y0, x1, y1) of rapidocr's ``DBPostProcess``
    (rapidocr's settings) on one page's (1, 1, H, W) probability map."""
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DBPostProcess
    post = DBPostProcess(thresh=0.3, box_thresh=0.5, max_candidates=1000,
                         unclip_ratio=1.6, score_mode='fast',
                         use_dilation=True)
    quads, _ = post(prob_map, prob_map.shape[2:])
    if len(quads) == 0:
        return np.zeros((0, 4), np.float32)
    quads = np.asarray(quads, np.float32)
    return np.concatenate([quads.min(1), quads.max(1)], axis=1)


def map_sqnr(reference: np.ndarray, other: np.ndarray) -> float:
    """SQNR in dB of ``other`` against ``reference`` over all elements."""
    return sqnr_db(reference, other)


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    x0 = np.maximum(box[0], boxes[:, 0])
    y0 = np.maximum(box[1], boxes[:, 1])
    x1 = np.minimum(box[2], boxes[:, 2])
    y1 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)


def box_iou(reference: Sequence[np.ndarray],
            other: Sequence[np.ndarray]) -> float:
    """Mean over the reference boxes of all pages of the IoU with their best
    match among ``other``'s boxes on the same page (0 where it has none)."""
    ious = []
    for ref, oth in zip(reference, other):
        oth = np.asarray(oth, np.float64).reshape(-1, 4)
        for box in np.asarray(ref, np.float64).reshape(-1, 4):
            ious.append(_iou(box, oth).max() if len(oth) else 0.0)
    return float(np.mean(ious)) if ious else float('nan')

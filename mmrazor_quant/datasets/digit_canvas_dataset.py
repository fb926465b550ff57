"""mmdet's COCO dataset over the digit canvases, generated on first use."""
from typing import List

from mmdet.datasets import CocoDataset

from mmrazor_quant.registry import DATASETS
from .digit_canvas import DIGIT_CLASSES, make_digit_canvas_coco


@DATASETS.register_module()
class DigitCanvasCocoDataset(CocoDataset):
    """:class:`mmdet.datasets.CocoDataset` on :func:`make_digit_canvas_coco`.

    The set is written to ``data_root`` when that folder does not hold it
    yet (deterministic, a few seconds), so configs need no download step.

    Args:
        split (str): ``'train'`` or ``'val'``; sets ``ann_file`` and the
            image prefix.
        **kwargs: :class:`CocoDataset`'s arguments (``data_root`` required).

    Raises:
        ValueError: If ``split`` is unknown.
    """

    METAINFO = dict(
        classes=DIGIT_CLASSES,
        palette=[(220, 20, 60), (119, 11, 32), (0, 0, 142), (0, 0, 230),
                 (106, 0, 228), (0, 60, 100), (0, 80, 100), (0, 0, 70),
                 (0, 0, 192), (250, 170, 30)])

    def __init__(self, split: str = 'train', **kwargs) -> None:
        if split not in ('train', 'val'):
            raise ValueError(
                f"DigitCanvasCocoDataset: split must be 'train' or 'val', "
                f'got {split!r}')
        self.split = split
        kwargs.setdefault('ann_file', f'annotations/{split}.json')
        kwargs.setdefault('data_prefix', dict(img=f'{split}/'))
        super().__init__(**kwargs)

    def load_data_list(self) -> List[dict]:
        make_digit_canvas_coco(self.data_root)
        data_list = super().load_data_list()
        if not any(d['instances'] for d in data_list):
            raise ValueError(
                f'{type(self).__name__}: {self.ann_file} has no boxes; a '
                'detection dataset needs annotated instances')
        return data_list

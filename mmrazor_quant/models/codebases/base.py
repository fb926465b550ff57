"""The codebase adapter: what is specific to one OpenMMLab codebase."""
import contextlib
from typing import ClassVar, ContextManager, List, Optional, Sequence, Tuple

import torch
from torch import nn

__all__ = ['BaseCodebase', 'InputShape', 'overriding_methods', 'static_shape']

#: ``(shape of one sample without the batch dimension, where it came from)``;
#: the shape is None when nothing fixes it.
InputShape = Tuple[Optional[Tuple[int, ...]], str]

#: Test-pipeline transforms whose output size is fixed by one argument: an
#: int, or a pair in the order given (mmcv's ``CenterCrop`` takes ``(w, h)``,
#: mmcls's crops ``(h, w)``).
_FIXED_SIZE_TRANSFORMS = {
    'CenterCrop': ('crop_size', 'wh'),
    'EfficientNetCenterCrop': ('crop_size', 'hw'),
    'RandomResizedCrop': ('scale', 'hw'),
    'EfficientNetRandomCrop': ('scale', 'hw'),
}
#: Transforms that change the size to one that depends on the image.
_IMAGE_DEPENDENT_SIZE = ('ResizeEdge', 'RandomResize', 'RandomChoiceResize')


class BaseCodebase:
    """What is specific to one OpenMMLab codebase (mmcls, mmdet, ...).

    An adapter is registered in :data:`~mmrazor_quant.registry.CODEBASES`
    and used for the models whose class (or a base class) is defined in one
    of its :attr:`packages`. The tracer takes its rewrites and default
    skipped methods from the adapters of the model it traces, and the
    example input shape when the model reads its shapes and the config
    gives none (:meth:`input_shape`); deploy picks the deploy head
    registered in :data:`~mmrazor_quant.registry.DEPLOY_HEADS` under its
    :attr:`task`;
    reconstruction (BRECQ, QDrop) takes its :attr:`block_types`.

    A codebase is one subclass (see ``docs/capture.md``, "Add a
    codebase"):

    .. code-block:: python

        @CODEBASES.register_module()
        class MMSegCodebase(BaseCodebase):
            packages = ('mmseg', )
            task = 'segmentation'
            default_input_hw = (512, 512)

    Attributes:
        packages (tuple[str]): Packages (or dotted sub-packages) whose model
            classes this adapter handles, e.g. ``('mmcls', )``.
        task (str, optional): The task its models solve, naming their
            deploy head (``'classification'``, ``'detection'``). None: the
            tensor outputs are compared as they are.
        default_input_hw (tuple[int, int], optional): ``(H, W)`` to trace
            at when neither the test pipeline nor the model fixes it. None
            guesses nothing.
        skipped_methods (tuple[str]): Methods kept out of the graphs of its
            models in addition to a config's ``skipped_methods`` (dotted
            paths, as in ``CustomTracer``).
        block_types (tuple[str]): Class names of the blocks that
            reconstruction treats as one unit.
    """
    packages: ClassVar[Tuple[str, ...]] = ()
    task: ClassVar[Optional[str]] = None
    default_input_hw: ClassVar[Optional[Tuple[int, int]]] = None
    skipped_methods: ClassVar[Tuple[str, ...]] = ()
    block_types: ClassVar[Tuple[str, ...]] = ()

    @property
    def name(self) -> str:
        """The name it is registered under (its class name)."""
        return type(self).__name__

    # -- which models ------------------------------------------------------
    def mro_depth(self, model_cls: type) -> Optional[int]:
        """How far up ``model_cls.__mro__`` the first class of one of
        :attr:`packages` is (0: ``model_cls`` itself); None if none is."""
        for depth, cls in enumerate(model_cls.__mro__):
            module = cls.__module__ or ''
            if any(module == p or module.startswith(p + '.')
                   for p in self.packages):
                return depth
        return None

    # -- tracing -------------------------------------------------------------
    def check_architecture(self, model: nn.Module) -> None:
        """Raise if ``model`` is a kind this adapter cannot quantize.

        Refuses a test-time augmentation wrapper (mmengine's
        ``BaseTTAModel``: ``SegTTAModel``, ``DetTTAModel``, ... built from
        a config's ``tta_model``): its test mode runs the model on several
        augmented copies and merges the results in Python, which no graph
        holds and no backend deploys.

        Raises:
            ValueError: Naming the config key to use instead.
        """
        from mmengine.model import BaseTTAModel
        if isinstance(model, BaseTTAModel):
            raise ValueError(
                f'architecture is a {type(model).__name__}, a test-time '
                "augmentation wrapper (the config's `tta_model`): its "
                'test mode merges augmented runs outside any graph and '
                'cannot be exported; quantize `model` (the wrapped '
                'model) and run test-time augmentation around the '
                'deployed model')

    def tracer_rewrites(self) -> ContextManager[None]:
        """A context in which the tracer traces this codebase's models:
        methods that cannot be traced as written are swapped for traceable
        ones meanwhile. Defaults to no rewrite."""
        return contextlib.nullcontext()

    def input_shape(self, model: nn.Module,
                    test_pipeline: Optional[Sequence[dict]] = None
                    ) -> InputShape:
        """The shape of one sample to trace ``model`` at, and its source.

        In order: the size the test pipeline crops or resizes to, the
        backbone's ``img_size`` (ViT, DeiT, Swin, ...), then
        :attr:`default_input_hw`; the channels are the first conv's input
        channels (3 without a conv).

        Args:
            model (nn.Module): The float model.
            test_pipeline (Sequence[dict], optional): The config's test
                pipeline. Defaults to None.

        Returns:
            tuple: ``(shape or None, source)``; the source reads like
            ``"the test pipeline's CenterCrop"``.
        """
        found = None
        if test_pipeline:
            found = self.pipeline_hw(test_pipeline)
        if found is None:
            found = self.model_hw(model)
        if found is None and self.default_input_hw is not None:
            found = (tuple(self.default_input_hw),
                     f'the {self.name} default for {self.task or "its"} '
                     'models')
        if found is None:
            return None, 'nothing in the config or model fixes it'
        hw, source = found
        return (in_channels_of(model), *hw), source

    def pipeline_hw(self, pipeline: Sequence[dict]
                    ) -> Optional[Tuple[Tuple[int, int], str]]:
        """``((H, W), source)`` of what ``pipeline`` outputs, if fixed.

        Read from the last transform that sets the size (``CenterCrop``,
        ``RandomResizedCrop``, ``Resize`` without ``keep_ratio``, ...);
        None when the last one that changes it depends on the image (e.g.
        ``ResizeEdge``, ``Resize(keep_ratio=True)``) or none does.
        """
        for transform in reversed(list(pipeline)):
            kind = str(transform.get('type', '')).split('.')[-1]
            if kind in _FIXED_SIZE_TRANSFORMS:
                key, order = _FIXED_SIZE_TRANSFORMS[kind]
                size = transform.get(key)
                hw = _as_hw(size) if order == 'hw' else _wh_to_hw(size)
                return hw, f"the test pipeline's {kind}"
            if kind == 'Resize':
                if transform.get('keep_ratio') or \
                        transform.get('scale') is None:
                    return None
                return (_wh_to_hw(transform['scale']),
                        "the test pipeline's Resize")
            if kind in _IMAGE_DEPENDENT_SIZE:
                return None
        return None

    def model_hw(self, model: nn.Module
                 ) -> Optional[Tuple[Tuple[int, int], str]]:
        """``((H, W), source)`` fixed by the model itself: the backbone's
        ``img_size``, or its patch embedding's input size."""
        backbone = getattr(model, 'backbone', model)
        size = getattr(backbone, 'img_size', None)
        if size is not None:
            return _as_hw(size), 'the backbone\'s img_size'
        patch_embed = getattr(backbone, 'patch_embed', None)
        size = getattr(patch_embed, 'init_input_size', None)
        if size is not None:
            return _as_hw(size), 'the backbone\'s img_size'
        return None

    # -- data samples --------------------------------------------------------
    def gt_labels(self, data_samples: Sequence) -> Optional[torch.Tensor]:
        """One class label per sample (for top-1 agreement at parity), or
        None when the samples carry none. Defaults to None."""
        return None

    def dataset_metainfo(self, cfg) -> dict:
        """Metainfo of the config's dataset that the model reads from its
        data samples at test time (mmpose's ``flip_indices``); set on the
        dummy data samples of a check. Defaults to none."""
        return {}

    def example_data_samples(self, model: nn.Module,
                             inputs: torch.Tensor) -> Optional[List]:
        """Data samples the tracer evaluates ``predict`` and ``loss`` with
        while it traces ``model`` on the example batch ``inputs``, where
        the graph branches on a shape computed from them (None, the
        default: those values stay unknown and such a branch fails the
        trace)."""
        return None

    def dummy_data_samples(self, inputs: torch.Tensor,
                           tensor_outputs) -> List:
        """Data samples with valid targets for a training step on
        ``inputs`` (e.g. the model check's QAT step on random images),
        given the model's tensor-mode outputs on them.

        Raises:
            NotImplementedError: If the codebase does not say how.
        """
        raise NotImplementedError(
            f'{self.name} does not build data samples; give the loss mode '
            'real data samples')


def static_shape(x) -> Tuple[int, ...]:
    """The shape of ``x``; of the trace's example value when ``x`` is a
    proxy of a tracer that keeps them (``CustomTracer`` with an input
    shape), read without a node in the graph.

    A rewrite that lays out a graph for the traced input size (flip test's
    mirror images, sliding windows) reads it here: a second reader of the
    model input would make the input's fake quant move off the input, to
    a place no other mode calibrates.

    Raises:
        TypeError: If ``x`` is a proxy without an example value.
    """
    import torch.fx
    if isinstance(x, torch.fx.Proxy):
        example = getattr(x.tracer, 'example_value', None)
        value = example(x.node) if example is not None else None
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                'this graph is laid out for one input size; give the '
                'quantized model an input_shape (or a test pipeline with '
                'a fixed size)')
        return tuple(int(v) for v in value.shape)
    return tuple(int(v) for v in x.shape)


def overriding_methods(base: type, names: Sequence[str]) -> Tuple[str, ...]:
    """Dotted paths of the methods ``names`` on ``base`` and on every
    subclass of it (imported so far) that defines its own, for an
    adapter's :attr:`~BaseCodebase.skipped_methods`: skipping a base
    class's ``loss_by_feat`` does not skip a head's override of it."""
    found = []
    for cls in [base] + _subclasses(base):
        found += [f'{cls.__module__}.{cls.__qualname__}.{name}'
                  for name in names if name in cls.__dict__]
    return tuple(found)


def _subclasses(cls: type) -> List[type]:
    """Every subclass of ``cls`` defined so far, depth first."""
    found = []
    for sub in cls.__subclasses__():
        found += [sub] + _subclasses(sub)
    return found


def in_channels_of(model: nn.Module) -> int:
    """Input channels of the first conv of ``model`` (3 if it has none)."""
    for module in model.modules():
        if isinstance(module, nn.modules.conv._ConvNd):
            return int(module.in_channels)
    return 3


def _as_hw(size) -> Tuple[int, int]:
    """An ``img_size`` (int or ``(H, W)``) as ``(H, W)``."""
    if isinstance(size, int):
        return size, size
    h, w = size
    return int(h), int(w)


def _wh_to_hw(size) -> Tuple[int, int]:
    """A pipeline size (int or mmcv's ``(w, h)``) as ``(H, W)``."""
    if isinstance(size, int):
        return size, size
    w, h = size
    return int(h), int(w)

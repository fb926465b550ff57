"""Helpers of the compatibility tests."""
import contextlib
import io
import logging
from typing import Iterator

from mmengine.logging import MMLogger


@contextlib.contextmanager
def captured_log() -> Iterator[io.StringIO]:
    """What mmengine's current logger writes meanwhile."""
    logger = MMLogger.get_current_instance()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)

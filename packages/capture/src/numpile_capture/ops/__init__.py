"""The canonical op set, one module per family; importing this registers them all."""

from . import pointwise as pointwise

__all__ = ["pointwise"]

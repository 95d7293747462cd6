"""NHWC / NCHW: the layout flag of the image operations, for definitions and reference kernels."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compiler.lowering_helpers import row_strides
from .definition import TensorInfo, require


@dataclass
class ImageSizes:
    """Sizes of an image operation, NHWC-normalised: input 0 is logically [batch, in_h, in_w, in_c]
    and output 0 [batch, out_h, out_w, out_c]; with ``nchw`` both are stored as [N, C, H, W]."""

    batch: int = 0
    in_h: int = 0
    in_w: int = 0
    in_c: int = 0
    out_h: int = 0
    out_w: int = 0
    out_c: int = 0
    nchw: bool = False


def nhwc_dims(inp: TensorInfo, nchw: bool, op_name: str) -> tuple[int, int, int, int]:
    """(N, H, W, C) of a rank-4 input in either layout."""
    dims = inp.dims()
    require(len(dims) == 4, op_name, f"input must be rank 4, got shape {list(dims)}")
    n, a, b, c = dims
    n, h, w, c = (n, b, c, a) if nchw else (n, a, b, c)
    require(h > 0 and w > 0 and c > 0, op_name, f"input height, width and depth must be > 0, got {list(dims)}")
    return n, h, w, c


def stored_shape(n: int, h: int, w: int, c: int, nchw: bool) -> tuple[int, int, int, int]:
    """The shape of an NHWC-described tensor as stored in the operation's layout."""
    return (n, c, h, w) if nchw else (n, h, w, c)


def image_strides(n: int, h: int, w: int, c: int, nchw: bool) -> tuple[int, ...]:
    """Element strides of the (n, y, x, c) axes of an image stored NHWC or NCHW."""
    s = row_strides(stored_shape(n, h, w, c, nchw))
    return (s[0], s[2], s[3], s[1]) if nchw else s


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if nchw else x)

"""CAST (every type pair, identities) and QUANTIZE on each accelerator device vs the reference, exact:
saturation, truncation, rounding ties, NaN and infinities."""
import numpy as np
import pytest

from .harness import check_op
from .models import OP, OT, In, Out

F32, F16, I32, Q8A, Q8AS = (OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_INT32, OT.TENSOR_QUANT8_ASYMM,
                            OT.TENSOR_QUANT8_ASYMM_SIGNED)
CONVERTIBLE = [F32, F16, I32, Q8A]
IDENTITY_ONLY = [OT.TENSOR_BOOL8, OT.TENSOR_QUANT16_ASYMM, OT.TENSOR_QUANT16_SYMM, Q8AS, OT.TENSOR_QUANT8_SYMM]


def _cast_data(t):
    """Values around every saturation and truncation edge of the target types."""
    floats = [-3e9, -2.0 ** 31, -300.5, -1.7, -0.5, -0.0, 0.0, 0.49, 0.5, 1.5, 2.5, 254.9, 255.0, 255.5, 256.0,
              2049.0, 65519.0, 65520.0, 1e6, 2.0 ** 31, np.inf, -np.inf, np.nan]
    if t == F32:
        return np.array(floats, np.float32)
    if t == F16:
        with np.errstate(over="ignore"):
            return np.array(floats, np.float32).astype(np.float16)
    if t == I32:
        return np.array([-2 ** 31, -70000, -256, -1, 0, 1, 2049, 2051, 255, 256, 65519, 65520, 70000, 2 ** 31 - 1,
                         16777217, -16777217, 4097, 3, 100, 200, 300, 7, 9], np.int32)
    return np.arange(0, 256, 11, dtype=np.uint8)


@pytest.mark.parametrize("src", CONVERTIBLE, ids=lambda t: t.name)
@pytest.mark.parametrize("dst", CONVERTIBLE, ids=lambda t: t.name)
def test_cast(accelerator, src, dst):
    x = _cast_data(src)
    q_in = (0.5, 3) if src == Q8A else ()
    q_out = (2.0, 7) if dst == Q8A else ()
    check_op(accelerator, OP.CAST, [In(src, x.shape, *q_in)], [Out(dst, *q_out)], data=[x],
             what=f"{src.name} -> {dst.name}")


@pytest.mark.parametrize("t", IDENTITY_ONLY, ids=lambda t: t.name)
def test_cast_identity(accelerator, t):
    q = (0.5, 0) if t != OT.TENSOR_BOOL8 else ()
    check_op(accelerator, OP.CAST, [In(t, (2, 3, 4), *q)], [Out(t, *q)], rng=np.random.default_rng(2))


@pytest.mark.parametrize("src", [F32, F16], ids=lambda t: t.name)
@pytest.mark.parametrize("dst, scale, zp", [(Q8A, 0.5, 100), (Q8A, 0.1, 0), (Q8AS, 0.25, -3), (Q8AS, 3.0, 127)])
def test_quantize(accelerator, src, dst, scale, zp):
    dtype = np.float16 if src == F16 else np.float32
    rng = np.random.default_rng(9)
    ties = (np.arange(-300, 300) + 0.5) * np.float32(scale)          # exact halves of the scale
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30], np.float32)
    x = np.concatenate([ties, rng.uniform(-200, 200, 400).astype(np.float32), special])
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    check_op(accelerator, OP.QUANTIZE, [In(src, x.shape)], [Out(dst, scale, zp)], data=[x],
             what=f"{src.name} -> {dst.name} ({scale}, {zp})")

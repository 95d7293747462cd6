"""L2_NORMALIZATION (every type; quantized exact), LOCAL_RESPONSE_NORMALIZATION and
INSTANCE_NORMALIZATION (float32, float16; NHWC and NCHW) on each accelerator device vs the reference,
default and explicit axes."""
import numpy as np

from gpu_driver import OperandType as OT

from .models import F32, OP, Q8A, In, Out, Scalar, f32, i32, random_data
from .test_activation import F16, F16_RTOL, Q8AS, check_ops, f16

_AXES = [((2, 3, 4, 9), None), ((3, 5), 0), ((2, 6, 3), 1), ((7,), None)]


def test_l2_normalization(accelerator):
    entries = []
    for shape, axis in _AXES:
        extra = [] if axis is None else [i32(axis)]
        entries += [(OP.L2_NORMALIZATION, [In(F32, shape), *extra], [Out(F32)]),
                    (OP.L2_NORMALIZATION, [In(Q8A, shape, 0.1, 120), *extra], [Out(Q8A, 1 / 128, 128)]),
                    (OP.L2_NORMALIZATION, [In(Q8AS, shape, 0.1, -8), *extra], [Out(Q8AS, 1 / 128, 0)])]

    def data(ins):
        rng = np.random.default_rng(19)
        arrays = [random_data(s, rng) for s in ins]
        arrays[1][0] = 120   # an all-zero row (Σv² = 0) and one with Σv² = 1
        arrays[2][0] = -8
        arrays[2][0, 0, 0, 0] = -7
        return arrays

    check_ops(accelerator, entries, None, data=data)


def test_l2_normalization_float16(accelerator):
    entries = [(OP.L2_NORMALIZATION, [In(F16, shape), *([] if axis is None else [i32(axis)])], [Out(F16)])
               for shape, axis in _AXES]
    check_ops(accelerator, entries, np.random.default_rng(20), rtol=F16_RTOL, atol=1e-3)


def test_lrn(accelerator):
    params = [(2, 1.0, 0.5, 0.75), (0, 0.5, 1.0, 0.5), (20, 2.0, 0.1, 1.3)]
    for t, scalar in ((F32, f32), (F16, f16)):
        entries = [(OP.LOCAL_RESPONSE_NORMALIZATION,
                    [In(t, shape), i32(r), scalar(b), scalar(a), scalar(beta), *([] if axis is None else [i32(axis)])],
                    [Out(t)])
                   for shape, axis in [((2, 3, 4, 9), None), ((2, 7, 3), 1)] for r, b, a, beta in params]
        tol = {} if t == F32 else dict(rtol=F16_RTOL, atol=1e-3)
        check_ops(accelerator, entries, np.random.default_rng(21), **tol)



def test_instance_normalization(accelerator):
    for t, scalar in ((F32, f32), (F16, f16)):
        entries = [(OP.INSTANCE_NORMALIZATION, [In(t, shape), scalar(gamma), scalar(beta), scalar(eps),
                                                 Scalar(OT.BOOL, nchw)], [Out(t)])
                   for shape, nchw in [((2, 3, 4, 5), False), ((2, 3, 4, 5), True), ((1, 1, 7, 2), False)]
                   for gamma, beta, eps in [(1.0, 0.0, 1e-4), (0.5, -1.5, 0.01)]]
        tol = {} if t == F32 else dict(rtol=F16_RTOL, atol=1e-2)
        check_ops(accelerator, entries, np.random.default_rng(22), **tol)

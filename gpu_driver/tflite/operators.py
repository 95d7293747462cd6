"""One converter per TF Lite operator: TF Lite's inputs and options → NNAPI operations.

A converter ``fn(em, op)`` reads the operator's tensors through the :class:`Emitter` and adds one
or more NNAPI operations; it raises :class:`Unsupported` with the reason when an operator (or an
option of it) has no NNAPI equivalent.  Conventions that differ between the two:

- padding enums: TF Lite SAME=0 / VALID=1, NNAPI implicit padding SAME=1 / VALID=2;
- fused activations NONE/RELU/RELU_N1_TO_1/RELU6 share NNAPI's FuseCode numbers; TF Lite's kernels
  ignore a fused TANH or SIGN_BIT (they only clamp), and so does the import;
- RESIZE_* take [height, width] as a tensor in TF Lite, width and height as scalars in NNAPI;
- the axis of SPLIT, the axes of reductions and the like are tensors in TF Lite, often scalars in
  NNAPI (they must be constants).
"""
from __future__ import annotations

import struct

import numpy as np

from ..hal.types import OperandLifeTime, OperandType as T, OperationType as O
from ..ops.quantized_lstm import QL_B_PROJ, QL_BIAS, QL_LN, QL_W_C, QL_W_H, QL_W_PROJ, QL_W_X
from .importer import Emitter, Unsupported, densify
from .reader import TENSOR_DTYPES, Operator

#: TF Lite Padding -> NNAPI implicit padding scheme
PADDING = {0: 1, 1: 2}
#: TF Lite ActivationFunctionType codes that equal NNAPI FuseCodes (NONE, RELU, RELU_N1_TO_1, RELU6)
FUSE_CODES = (0, 1, 2, 3)


# ---- helpers ---------------------------------------------------------------------------------------

def _opt(op: Operator, name: str, default=None):
    if op.options is None:
        return default
    return getattr(op.options, name)()


def _const(em: Emitter, op: Operator, k: int, what: str) -> np.ndarray:
    v = em.value(op.inputs[k]) if k < len(op.inputs) else None
    if v is None:
        raise Unsupported(f"{what} (input {k}) must be a constant")
    return np.asarray(v)


def _activation(op: Operator) -> int:
    """The NNAPI fuse code of the operator's fused activation.  TF Lite's own kernels turn it into a
    clamp range (CalculateActivationRange), in which TANH and SIGN_BIT clamp nothing: so here too."""
    act = _opt(op, "FusedActivationFunction", 0)
    return act if act in FUSE_CODES else 0


def _fused(em: Emitter, op: Operator, make) -> None:
    """Emit ``make(act_operand, out_operand)`` with the operator's fused activation."""
    make(em.i32(_activation(op)), em.output(op.outputs[0]))


def _unfused_then(em: Emitter, op: Operator, op_type: O, inputs: list[int]) -> None:
    """An NNAPI operation without a fused activation, followed by the operator's activation."""
    act = _activation(op)
    out = em.output(op.outputs[0])
    if act == 0:
        em.op(op_type, inputs, [out])
        return
    tmp = em.like(op.outputs[0])
    em.op(op_type, inputs, [tmp])
    em.op({1: O.RELU, 2: O.RELU1, 3: O.RELU6}[act], [tmp], [out])


def _bias(em: Emitter, op: Operator, k: int, units: int) -> int:
    """The bias operand: the tensor, or zeros of the right type when the operator has none."""
    if k < len(op.inputs) and op.inputs[k] >= 0:
        return em.operand(op.inputs[k])
    x = em.tensor(op.inputs[0])
    w = em.tensor(op.inputs[1])
    if x.type_name in ("FLOAT32", "FLOAT16") or em.value(op.inputs[1]) is not None and \
            em.value(op.inputs[1]).dtype == np.float32:
        dtype = T.TENSOR_FLOAT16 if x.type_name == "FLOAT16" else T.TENSOR_FLOAT32
        return em.constant(dtype, np.zeros(units, np.float32))
    per_channel = w.quantization is not None and len(w.quantization.scales) > 1
    scale = 0.0 if per_channel else x.quantization.scales[0] * w.quantization.scales[0]
    return em.constant(T.TENSOR_INT32, np.zeros(units, np.int32), scale)


# ---- element-wise ----------------------------------------------------------------------------------

_QUANTIZED = ("INT8", "UINT8")


def _direct(op_type: O, scalars=lambda em, op: []):
    """The operator's inputs as they are, then ``scalars(em, op)``.  A quantized form NNAPI refuses —
    a type it lacks (EXP, LOG, ELU of int8…), or an input scale its fixed-point kernel cannot take
    (LOGISTIC, TANH, SOFTMAX; TF Lite's lookup tables take any) — is computed in float between
    DEQUANTIZE and QUANTIZE."""
    def convert(em: Emitter, op: Operator) -> None:
        args = [em.operand(i) for i in op.inputs] + scalars(em, op)
        outs = [em.output(o) for o in op.outputs]
        if len(outs) == 1 and em.tensor(op.outputs[0]).type_name in _QUANTIZED and \
                em.refusal(op_type, args, outs):
            extra = scalars(em, op)
            _through_float(em, op, lambda ins, result: em.op(op_type, ins + extra, [result]))
            return
        em.op(op_type, args, outs)
    return convert


def _with_activation(op_type: O):
    def convert(em: Emitter, op: Operator) -> None:
        a, b = em.operand(op.inputs[0]), em.operand(op.inputs[1])
        _fused(em, op, lambda act, out: em.op(op_type, [a, b, act], [out]))
    return convert


def _dequantized(t, value: np.ndarray) -> np.ndarray:
    """A quantized (or float16) constant of tensor ``t`` as float32: per-tensor or per-channel."""
    if t.quantization is not None and value.dtype != np.float16 and value.dtype != np.float32:
        q = t.quantization
        shape = [1] * value.ndim
        if len(q.scales) > 1:
            shape[q.dimension] = -1
        scales = np.asarray(q.scales, np.float32).reshape(shape)
        zps = np.asarray(q.zero_points, np.float32).reshape(shape)
        value = (value.astype(np.float32) - zps) * scales
    return np.asarray(value, dtype=np.float32)


def _dequantize(em: Emitter, op: Operator) -> None:
    src = op.inputs[0]
    value = em.value(src)
    t = em.tensor(src)
    if value is None and t.sparse is not None:
        value = densify(t)
    if value is not None:  # constant: fold now (float16 weights, quantized constants)
        em.folded[op.outputs[0]] = _dequantized(t, value)
        return
    em.op(O.DEQUANTIZE, [em.operand(src)], [em.output(op.outputs[0])])


def _quantize(em: Emitter, op: Operator) -> None:
    """QUANTIZE; from a quantized input (TF Lite's requantization, e.g. int8 to int8 with another
    scale, or uint8 to int8) it goes through float: DEQUANTIZE, then QUANTIZE."""
    src = op.inputs[0]
    if em.tensor(src).type_name in ("FLOAT32", "FLOAT16") or em.value(src) is not None:
        em.op(O.QUANTIZE, [em.operand(src)], [em.output(op.outputs[0])])
        return
    tmp = em.b.add_operand(T.TENSOR_FLOAT32, em.shape_of(src))
    em.op(O.DEQUANTIZE, [em.operand(src)], [tmp])
    em.op(O.QUANTIZE, [tmp], [em.output(op.outputs[0])])


def _densify(em: Emitter, op: Operator) -> None:
    t = em.tensor(op.inputs[0])
    if t.sparse is None or t.data is None:
        raise Unsupported("DENSIFY of a non-constant tensor")
    em.folded[op.outputs[0]] = densify(t)


def _same_quantization(em: Emitter, a: int, b: int) -> bool:
    qa, qb = em.tensor(a).quantization, em.tensor(b).quantization
    if qa is None or qb is None:
        return qa is None and qb is None
    return list(qa.scales) == list(qb.scales) and list(qa.zero_points) == list(qb.zero_points)


def _clamp(op_type: O, low: float | None, high: float | None):
    """RELU / RELU6 / RELU_N1_TO_1.  TF Lite's quantized kernels may requantize (output parameters
    other than the input's), which NNAPI's activations do not: then MAXIMUM / MINIMUM with the real
    bounds as constants, which requantize to their output's parameters."""
    def convert(em: Emitter, op: Operator) -> None:
        x, out = op.inputs[0], op.outputs[0]
        if em.tensor(x).type_name in ("FLOAT32", "FLOAT16", "INT32") or _same_quantization(em, x, out):
            em.op(op_type, [em.operand(x)], [em.output(out)])
            return
        # the bounds in the output's parameters, as TF Lite's clamp range
        otype, scale, zp = em.operand_type(em.tensor(out))[:3]
        info = np.iinfo(np.uint8 if otype == T.TENSOR_QUANT8_ASYMM else np.int8)

        def bound(real: float) -> int:
            q = np.clip(np.round(real / scale) + zp, info.min, info.max).astype(info.dtype)
            return em.constant(otype, q.reshape(1), scale, zp)

        value = em.operand(x)
        steps = [(step, real) for step, real in ((O.MAXIMUM, low), (O.MINIMUM, high)) if real is not None]
        for k, (step, real) in enumerate(steps):
            target = em.output(out) if k == len(steps) - 1 else em.like(out)
            em.op(step, [value, bound(real)], [target])
            value = target
    return convert


def _leaky_relu(em: Emitter, op: Operator) -> None:
    x = op.inputs[0]
    t = em.tensor(x)
    alpha = float(_opt(op, "Alpha", 0.2))
    if t.type_name in ("FLOAT32", "FLOAT16"):
        a = em.constant(T.TENSOR_FLOAT16 if t.type_name == "FLOAT16" else T.TENSOR_FLOAT32, np.asarray([alpha]))
    elif t.type_name in ("INT8", "UINT8") and alpha != 0:
        # PRELU requantizes both branches to the output's parameters; alpha exactly representable as
        # one quantum of scale |alpha| (zero point 0, or 1 with q = 0 for a negative uint8 alpha)
        otype = em.operand_type(t)[0]
        if otype == T.TENSOR_QUANT8_ASYMM:
            q, zp = (1, 0) if alpha > 0 else (0, 1)
            a = em.constant(otype, np.asarray([q], np.uint8), abs(alpha), zp)
        else:
            a = em.constant(otype, np.asarray([1 if alpha > 0 else -1], np.int8), abs(alpha), 0)
    else:
        raise Unsupported(f"LEAKY_RELU of {t.type_name} with alpha {alpha}")
    em.op(O.PRELU, [em.operand(x), a], [em.output(op.outputs[0])])


def _square(em: Emitter, op: Operator) -> None:
    x = em.operand(op.inputs[0])
    em.op(O.MUL, [x, x, em.i32(0)], [em.output(op.outputs[0])])


def _squared_difference(em: Emitter, op: Operator) -> None:
    """SQUARED_DIFFERENCE as SUB then MUL; quantized in float (a difference held in the square's
    quantization would lose most of its precision, TF Lite keeps it exact)."""
    def emit(a: int, b: int, out: int, like: int | None) -> None:
        d = em.like(op.outputs[0]) if like is None else em.b.add_operand(T.TENSOR_FLOAT32, em.shape_of(like))
        em.op(O.SUB, [a, b, em.i32(0)], [d])
        em.op(O.MUL, [d, d, em.i32(0)], [out])

    if em.tensor(op.outputs[0]).type_name in _QUANTIZED:
        _through_float(em, op, lambda ins, result: emit(ins[0], ins[1], result, op.outputs[0]))
        return
    emit(em.operand(op.inputs[0]), em.operand(op.inputs[1]), em.output(op.outputs[0]), None)


def _ceil(em: Emitter, op: Operator) -> None:
    """CEIL as −floor(−x) (exact, −0 included)."""
    neg, floored = em.like(op.inputs[0]), em.like(op.inputs[0])
    em.op(O.NEG, [em.operand(op.inputs[0])], [neg])
    em.op(O.FLOOR, [neg], [floored])
    em.op(O.NEG, [floored], [em.output(op.outputs[0])])


def _floor_div(em: Emitter, op: Operator) -> None:
    """FLOOR_DIV: NNAPI's INT32 DIV already rounds toward −∞; float is FLOOR(DIV)."""
    a, b = em.operand(op.inputs[0]), em.operand(op.inputs[1])
    if em.tensor(op.inputs[0]).type_name == "INT32":
        em.op(O.DIV, [a, b, em.i32(0)], [em.output(op.outputs[0])])
        return
    q = em.like(op.outputs[0])
    em.op(O.DIV, [a, b, em.i32(0)], [q])
    em.op(O.FLOOR, [q], [em.output(op.outputs[0])])


def _relu_0_to_1(em: Emitter, op: Operator) -> None:
    """RELU_0_TO_1 as RELU then MINIMUM with 1 (NaN gives 0, as TF Lite's std::max(0, x))."""
    r = em.like(op.outputs[0])
    em.op(O.RELU, [em.operand(op.inputs[0])], [r])
    em.op(O.MINIMUM, [r, em.constant(T.TENSOR_FLOAT32, np.ones(1, np.float32))], [em.output(op.outputs[0])])


#: Abramowitz & Stegun 7.1.26: erf(z) = 1 − t·(a1 + t·(a2 + … + t·a5))·e^(−z²), t = 1/(1 + p·z), z ≥ 0,
#: absolute error ≤ 1.5e−7 (float32 resolution near 1)
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _gelu(em: Emitter, op: Operator) -> None:
    """GELU.  Tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).  Exact form x·Φ(x),
    NNAPI having no erf: with q = ½·(1 − erf(|x|/√2)) from the A&S 7.1.26 polynomial,
    x·Φ(x) = ½·x + |x|·(½ − q) (no sign needed: x·sign(x) = |x|).  Quantized: computed in float."""
    approximate = bool(_opt(op, "Approximate", False))
    if em.tensor(op.inputs[0]).type_name in _QUANTIZED:
        _through_float(em, op, lambda ins, out: _gelu_float(em, ins[0], out, approximate))
        return
    _gelu_float(em, em.operand(op.inputs[0]), em.output(op.outputs[0]), approximate)


def _gelu_float(em: Emitter, x: int, result: int, approximate: bool) -> None:
    """GELU of float operand ``x`` into ``result`` (see :func:`_gelu`)."""
    operand = em.b.operand(x)
    ftype, dims = operand.type, list(operand.dimensions)

    def const(v: float) -> int:
        return em.constant(ftype, np.array([v], np.float16 if ftype == T.TENSOR_FLOAT16 else np.float32))

    def step(kind: O, a: int, b: int | None = None, out: int | None = None) -> int:
        out = em.b.add_operand(ftype, dims) if out is None else out
        em.op(kind, [a] if b is None else [a, b, em.i32(0)], [out])
        return out

    if approximate:
        cube = step(O.MUL, step(O.MUL, x, x), x)
        inner = step(O.MUL, step(O.ADD, step(O.MUL, cube, const(0.044715)), x), const(float(np.sqrt(2.0 / np.pi))))
        one_plus = step(O.ADD, step(O.TANH, inner), const(1.0))
        step(O.MUL, step(O.MUL, x, const(0.5)), one_plus, out=result)
        return
    magnitude = step(O.ABS, x)
    t = step(O.DIV, const(1.0), step(O.ADD, step(O.MUL, magnitude, const(_ERF_P / np.sqrt(2.0))), const(1.0)))
    poly = step(O.MUL, t, const(_ERF_A[-1]))
    for a in reversed(_ERF_A[:-1]):
        poly = step(O.MUL, step(O.ADD, poly, const(a)), t)
    gauss = step(O.EXP, step(O.MUL, step(O.MUL, x, x), const(-0.5)))
    q = step(O.MUL, step(O.MUL, poly, gauss), const(0.5))
    tail = step(O.MUL, magnitude, step(O.SUB, const(0.5), q))
    step(O.ADD, step(O.MUL, x, const(0.5)), tail, out=result)


def _through_float(em: Emitter, op: Operator, emit) -> None:
    """A quantized operator computed in float: each quantized input dequantized (a constant at
    import, an activation by DEQUANTIZE), ``emit(float inputs, float output)`` builds the float form,
    and a QUANTIZE writes the operator's output."""
    ins = []
    for i in op.inputs:
        t = em.tensor(i)
        if t.type_name not in _QUANTIZED:
            ins.append(em.operand(i))
        elif em.value(i) is not None:
            ins.append(em.constant(T.TENSOR_FLOAT32, _dequantized(t, np.asarray(em.value(i)))))
        else:
            f = em.b.add_operand(T.TENSOR_FLOAT32, em.shape_of(i))
            em.op(O.DEQUANTIZE, [em.operand(i)], [f])
            ins.append(f)
    result = em.b.add_operand(T.TENSOR_FLOAT32, em.shape_of(op.outputs[0]))
    emit(ins, result)
    em.op(O.QUANTIZE, [result], [em.output(op.outputs[0])])


def _add_n(em: Emitter, op: Operator) -> None:
    acc = em.operand(op.inputs[0])
    for k, i in enumerate(op.inputs[1:], 1):
        out = em.output(op.outputs[0]) if k == len(op.inputs) - 1 else em.like(op.outputs[0])
        em.op(O.ADD, [acc, em.operand(i), em.i32(0)], [out])
        acc = out


def _elu(em: Emitter, op: Operator) -> None:
    _direct(O.ELU, lambda em, op: [em.float_scalar(1.0, op.inputs[0])])(em, op)


def _select(em: Emitter, op: Operator) -> None:
    shapes = [tuple(em.shape_of(i)) for i in op.inputs]
    if len(set(shapes)) != 1:
        raise Unsupported("NNAPI SELECT does not broadcast")
    _direct(O.SELECT)(em, op)


# ---- convolution, pooling, fully connected ---------------------------------------------------------

def _conv(em: Emitter, op: Operator) -> None:
    """CONV_2D.  TF Lite's grouped form (filter input channels a divisor of the input's) becomes
    DEPTHWISE_CONV_2D when every group is one channel (filter [O,H,W,1] transposed to [1,H,W,O]: the
    output channel order c·M + m is depthwise's), GROUPED_CONV_2D otherwise."""
    x, w = op.inputs[0], op.inputs[1]
    units, _, _, depth = em.shape_of(w)
    channels = em.known_dims(x)[-1]
    if channels > 0 and depth != channels:
        _grouped_conv(em, op, channels, units, depth)
        return
    args = [em.operand(x), em.operand(w), _bias(em, op, 2, units), em.i32(PADDING[_opt(op, "Padding")]),
            em.i32(_opt(op, "StrideW")), em.i32(_opt(op, "StrideH"))]
    dil = (_opt(op, "DilationWFactor", 1), _opt(op, "DilationHFactor", 1))

    def make(act, out):
        tail = [em.boolean(False), em.i32(dil[0]), em.i32(dil[1])] if dil != (1, 1) else []
        em.op(O.CONV_2D, args + [act] + tail, [out])
    _fused(em, op, make)


def _grouped_conv(em: Emitter, op: Operator, channels: int, units: int, depth: int) -> None:
    if channels % depth or units % (channels // depth):
        raise Unsupported(f"grouped CONV_2D of {channels} input channels with a filter of {depth}")
    groups = channels // depth
    dil = (_opt(op, "DilationWFactor", 1), _opt(op, "DilationHFactor", 1))
    common = [em.i32(PADDING[_opt(op, "Padding")]), em.i32(_opt(op, "StrideW")), em.i32(_opt(op, "StrideH"))]
    x, w = op.inputs[0], op.inputs[1]
    if depth == 1:
        value = em.value(w)
        if value is None:
            raise Unsupported("a depthwise-grouped CONV_2D with filter weights known only at execution")
        otype, scale, zp, per_channel = em.operand_type(em.tensor(w))
        if per_channel is not None:
            per_channel = type(per_channel)(list(per_channel.scales), 3)
        kh, kw = em.shape_of(w)[1:3]
        filt = em.b.add_constant(otype, [1, kh, kw, units],
                                 np.asarray(value).reshape(units, kh, kw).transpose(1, 2, 0).reshape(-1),
                                 scale, zp, per_channel)
        args = [em.operand(x), filt, _bias(em, op, 2, units), *common, em.i32(units // channels)]

        def make(act, out):
            tail = [em.boolean(False), em.i32(dil[0]), em.i32(dil[1])] if dil != (1, 1) else []
            em.op(O.DEPTHWISE_CONV_2D, args + [act] + tail, [out])
        _fused(em, op, make)
        return
    if dil != (1, 1):
        raise Unsupported("dilated grouped CONV_2D (NNAPI's GROUPED_CONV_2D has no dilation)")
    args = [em.operand(x), em.operand(w), _bias(em, op, 2, units), *common, em.i32(groups)]
    _fused(em, op, lambda act, out: em.op(O.GROUPED_CONV_2D, args + [act, em.boolean(False)], [out]))


def _depthwise(em: Emitter, op: Operator) -> None:
    x, w = op.inputs[0], op.inputs[1]
    units = em.shape_of(w)[3]
    multiplier = _opt(op, "DepthMultiplier", 1) or units // max(em.shape_of(x)[3], 1)
    args = [em.operand(x), em.operand(w), _bias(em, op, 2, units), em.i32(PADDING[_opt(op, "Padding")]),
            em.i32(_opt(op, "StrideW")), em.i32(_opt(op, "StrideH")), em.i32(multiplier)]
    dil = (_opt(op, "DilationWFactor", 1), _opt(op, "DilationHFactor", 1))

    def make(act, out):
        tail = [em.boolean(False), em.i32(dil[0]), em.i32(dil[1])] if dil != (1, 1) else []
        em.op(O.DEPTHWISE_CONV_2D, args + [act] + tail, [out])
    _fused(em, op, make)


def _transpose_conv(em: Emitter, op: Operator) -> None:
    """TRANSPOSE_CONV: inputs (output_shape, weights [O,H,W,I], input, optional bias)."""
    w, x = op.inputs[1], op.inputs[2]
    units = em.shape_of(w)[0]
    out_shape = em.i32_vector(_const(em, op, 0, "output_shape").reshape(-1))
    args = [em.operand(x), em.operand(w), _bias(em, op, 3, units), out_shape,
            em.i32(PADDING[_opt(op, "Padding")]), em.i32(_opt(op, "StrideW")), em.i32(_opt(op, "StrideH"))]
    _fused(em, op, lambda act, out: em.op(O.TRANSPOSE_CONV_2D, args + [act, em.boolean(False)], [out]))


def _transpose_conv_bias(em: Emitter, op: Operator) -> None:
    """MediaPipe's Convolution2DTransposeBias: inputs (input, weights OHWI, bias); options a raw
    TfLiteTransposeConvParams {padding (TfLitePadding SAME=1, VALID=2), stride_w, stride_h}."""
    if len(op.custom_options) < 12:
        raise Unsupported("Convolution2DTransposeBias options are not the 12-byte TfLiteTransposeConvParams")
    padding, stride_w, stride_h = struct.unpack("<3i", op.custom_options[:12])
    if padding not in (1, 2):
        raise Unsupported(f"padding {padding}")
    x, w, b = op.inputs[:3]
    out_shape = em.shape_of(op.outputs[0])
    args = [em.operand(x), em.operand(w), em.operand(b), em.i32_vector(out_shape), em.i32(padding),
            em.i32(stride_w), em.i32(stride_h), em.i32(0), em.boolean(False)]
    em.op(O.TRANSPOSE_CONV_2D, args, [em.output(op.outputs[0])])


def _pool(op_type: O):
    def convert(em: Emitter, op: Operator) -> None:
        args = [em.operand(op.inputs[0]), em.i32(PADDING[_opt(op, "Padding")]), em.i32(_opt(op, "StrideW")),
                em.i32(_opt(op, "StrideH")), em.i32(_opt(op, "FilterWidth")), em.i32(_opt(op, "FilterHeight"))]
        _fused(em, op, lambda act, out: em.op(op_type, args + [act], [out]))
    return convert


def _fully_connected(em: Emitter, op: Operator) -> None:
    """FULLY_CONNECTED; keep_num_dims through a RESHAPE of the [B, U] result.  Per-channel quantized
    weights (NNAPI's FULLY_CONNECTED has none) become a 1×1 CONV_2D over a [B, 1, 1, I] view."""
    if _opt(op, "WeightsFormat", 0) != 0:
        raise Unsupported("shuffled FULLY_CONNECTED weights")
    x, w = op.inputs[0], op.inputs[1]
    units, depth = em.shape_of(w)[:2]
    x_dims = list(em.known_dims(x))
    keep = _opt(op, "KeepNumDims", False) and len(x_dims) != 2
    if keep and any(d < 0 for d in x_dims[:-1]):
        raise Unsupported("keep_num_dims with dimensions known only at execution")
    out_dims = x_dims[:-1] + [units] if keep else None
    wq = em.tensor(w).quantization
    if wq is not None and len(wq.scales) > 1:
        if any(d < 0 for d in x_dims):
            raise Unsupported("per-channel weights with an input known only at execution")
        batch = int(np.prod(x_dims)) // depth
        view, result = em.like(x, shape=[batch, 1, 1, depth]), em.like(op.outputs[0], shape=[batch, 1, 1, units])
        em.op(O.RESHAPE, [em.operand(x), em.i32_vector([batch, 1, 1, depth])], [view])
        filt = em.b.add_constant(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [units, 1, 1, depth],
                                 np.asarray(em.value(w)).reshape(-1), 0.0, 0, em.operand_type(em.tensor(w))[3])
        em.op(O.CONV_2D, [view, filt, _bias(em, op, 2, units), em.i32(2), em.i32(1), em.i32(1),
                          em.i32(_activation(op))], [result])
        em.op(O.RESHAPE, [result, em.i32_vector(out_dims or [batch, units])], [em.output(op.outputs[0])])
        return
    args = [em.operand(x), em.operand(w), _bias(em, op, 2, units)]
    if keep:
        flat = em.like(op.outputs[0], [int(np.prod(out_dims[:-1])), units])
        em.op(O.FULLY_CONNECTED, args + [em.i32(_activation(op))], [flat])
        em.op(O.RESHAPE, [flat, em.i32_vector(out_dims)], [em.output(op.outputs[0])])
        return
    _fused(em, op, lambda act, out: em.op(O.FULLY_CONNECTED, args + [act], [out]))


def _batch_matmul(em: Emitter, op: Operator) -> None:
    em.op(O.BATCH_MATMUL, [em.operand(op.inputs[0]), em.operand(op.inputs[1]), em.boolean(_opt(op, "AdjX", False)),
                           em.boolean(_opt(op, "AdjY", False))], [em.output(op.outputs[0])])


# ---- activations with arguments ---------------------------------------------------------------------

def _softmax(em: Emitter, op: Operator) -> None:
    _direct(O.SOFTMAX, lambda em, op: [em.float_scalar(_opt(op, "Beta", 1.0), op.inputs[0])])(em, op)


def _log_softmax(em: Emitter, op: Operator) -> None:
    em.op(O.LOG_SOFTMAX, [em.operand(op.inputs[0]), em.float_scalar(1.0, op.inputs[0]), em.i32(-1)],
          [em.output(op.outputs[0])])


def _l2_norm(em: Emitter, op: Operator) -> None:
    _unfused_then(em, op, O.L2_NORMALIZATION, [em.operand(op.inputs[0])])


def _lrn(em: Emitter, op: Operator) -> None:
    x = op.inputs[0]
    em.op(O.LOCAL_RESPONSE_NORMALIZATION,
          [em.operand(x), em.i32(_opt(op, "Radius")), em.float_scalar(_opt(op, "Bias"), x),
           em.float_scalar(_opt(op, "Alpha"), x), em.float_scalar(_opt(op, "Beta"), x)], [em.output(op.outputs[0])])


# ---- shapes and data movement -------------------------------------------------------------------------

def _concatenation(em: Emitter, op: Operator) -> None:
    rank = len(em.shape_of(op.outputs[0]))
    axis = _opt(op, "Axis", 0)
    if em.tensor(op.inputs[0]).type_name in ("INT32", "INT64"):
        _concatenate_int32(em, op, axis % rank if rank else 0)
        return
    _unfused_then(em, op, O.CONCATENATION, [em.operand(i) for i in op.inputs] + [em.i32(axis % rank if rank else 0)])


def _concatenate_int32(em: Emitter, op: Operator, axis: int) -> None:
    """CONCATENATION of INT32 tensors (shape arithmetic), which NNAPI's CONCATENATION lacks: constant
    pieces are placed in one constant; each other piece is placed at its offset of the output
    (:func:`_placed_int32`) and added."""
    dims = [_known_shape(em, i) or [1] for i in op.inputs]
    out_dims = list(dims[0])
    out_dims[axis] = sum(d[axis] for d in dims)
    if len(out_dims) > 4:
        raise Unsupported(f"INT32 CONCATENATION of rank {len(out_dims)}")
    base = np.zeros(out_dims, np.int32)
    total, offset = None, 0
    for i, d in zip(op.inputs, dims):
        size = d[axis]
        value = em.value(i)
        window = [slice(None)] * len(out_dims)
        window[axis] = slice(offset, offset + size)
        if value is not None:
            base[tuple(window)] = np.asarray(value).reshape(d)
        elif size:
            masked = _placed_int32(em, em.operand(i), op.outputs[0], size, out_dims, axis, offset)
            if total is not None:
                summed = em.like(op.outputs[0], shape=out_dims)
                em.op(O.ADD, [total, masked, em.i32(0)], [summed])
                masked = summed
            total = masked
        offset += size
    if total is None:
        em.folded[op.outputs[0]] = base
        return
    em.op(O.ADD, [total, em.constant(T.TENSOR_INT32, base), em.i32(0)], [em.output(op.outputs[0])])


def _reshape(em: Emitter, op: Operator) -> None:
    shape = em.shape_of(op.outputs[0])
    if len(op.inputs) > 1 and em.value(op.inputs[1]) is not None:
        target = np.asarray(em.value(op.inputs[1])).reshape(-1)
    elif 0 not in shape:
        target = np.asarray(shape)
    elif op.options is not None and not op.options.NewShapeIsNone():
        target = op.options.NewShapeAsNumpy()
    else:
        raise Unsupported("RESHAPE to a shape known only at execution")
    if op.inputs[0] in em.deferred:
        _repeat(em, op, [int(v) for v in target])
        return
    em.op(O.RESHAPE, [em.operand(op.inputs[0]), em.i32_vector(target)], [em.output(op.outputs[0])])


def _squeeze(em: Emitter, op: Operator) -> None:
    dims = op.options.SqueezeDimsAsNumpy() if op.options is not None and not op.options.SqueezeDimsIsNone() else []
    axes = em.i32_vector(dims) if len(dims) else em.b.add_no_value(T.TENSOR_INT32, [0])
    em.op(O.SQUEEZE, [em.operand(op.inputs[0]), axes], [em.output(op.outputs[0])])


def _expand_dims(em: Emitter, op: Operator) -> None:
    """EXPAND_DIMS; to rank 5 it is deferred: a following TILE and RESHAPE may make it a repeat."""
    axis = int(_const(em, op, 1, "axis").reshape(-1)[0])
    rank = len(em.known_dims(op.inputs[0]))
    if rank >= 4:
        em.deferred[op.outputs[0]] = ("expanded", op.inputs[0], axis % (rank + 1))
        return
    em.op(O.EXPAND_DIMS, [em.operand(op.inputs[0]), em.i32(axis)], [em.output(op.outputs[0])])


def _tile(em: Emitter, op: Operator) -> None:
    """TILE; of a deferred rank-5 EXPAND_DIMS along the inserted axis only, deferred in turn."""
    x = op.inputs[0]
    if x in em.deferred:
        _, source, axis = em.deferred[x]
        multiples = [int(v) for v in _const(em, op, 1, "multiples").reshape(-1)]
        if any(m != 1 for k, m in enumerate(multiples) if k != axis):
            raise Unsupported("TILE of a rank-5 tensor other than along its inserted axis")
        em.deferred[op.outputs[0]] = ("repeated", source, axis, multiples[axis])
        return
    em.op(O.TILE, [em.operand(x), em.operand(op.inputs[1])], [em.output(op.outputs[0])])


def _repeat(em: Emitter, op: Operator, target: list[int]) -> None:
    """RESHAPE of a deferred EXPAND_DIMS → TILE (an axis inserted at ``axis`` and tiled ``m`` times)
    that merges the tiled axis into a neighbour: a GATHER along that neighbour, each index repeated
    ``m`` times (merged with the one before) or the whole range ``m`` times (with the one after)."""
    kind, source, axis, m = em.deferred[op.inputs[0]]
    if kind != "repeated":
        raise Unsupported("RESHAPE of a rank-5 tensor")
    dims = list(_known_shape(em, source))
    before, after = list(dims), list(dims)
    if axis > 0:
        before[axis - 1] *= m
    if axis < len(dims):
        after[axis] *= m
    if axis > 0 and target == before:
        along, index = axis - 1, np.repeat(np.arange(dims[axis - 1]), m)
    elif axis < len(dims) and target == after:
        along, index = axis, np.tile(np.arange(dims[axis]), m)
    else:
        raise Unsupported(f"RESHAPE of a rank-5 tensor to {target}")
    em.op(O.GATHER, [em.operand(source), em.i32(along), em.constant(T.TENSOR_INT32, index.astype(np.int32))],
          [em.output(op.outputs[0])])


def _tensor_args(op_type: O, *scalars):
    """Inputs as tensors, then the named options as INT32 scalars."""
    def convert(em: Emitter, op: Operator) -> None:
        extra = [em.i32(_opt(op, name, 0)) for name in scalars]
        em.op(op_type, [em.operand(i) for i in op.inputs] + extra, [em.output(o) for o in op.outputs])
    return convert


def _reduce(op_type: O, keep_as_int: bool = False):
    """A reduction.  Quantized REDUCE_MAX / REDUCE_MIN keep the input's parameters in NNAPI; TF
    Lite's may requantize: then MAXIMUM of the result with itself requantizes it to the output's.
    Quantized MEAN is computed in float: NNAPI's truncates the integer mean, TF Lite's rounds."""
    def convert(em: Emitter, op: Operator) -> None:
        keep = bool(_opt(op, "KeepDims", False))
        flag = em.i32(int(keep)) if keep_as_int else em.boolean(keep)
        x, out = op.inputs[0], op.outputs[0]
        if op_type == O.MEAN and em.tensor(x).type_name in _QUANTIZED:
            axes = em.operand(op.inputs[1])
            _through_float(em, op, lambda ins, result: em.op(op_type, [ins[0], axes, flag], [result]))
            return
        args = [em.operand(x), em.operand(op.inputs[1]), flag]
        if em.tensor(x).quantization is None or _same_quantization(em, x, out):
            em.op(op_type, args, [em.output(out)])
            return
        otype, scale, zp, _ = em.operand_type(em.tensor(x))
        reduced = em.b.add_operand(otype, em.shape_of(out), scale, zp)
        em.op(op_type, args, [reduced])
        em.op(O.MAXIMUM, [reduced, reduced], [em.output(out)])
    return convert


def _pad_v2(em: Emitter, op: Operator) -> None:
    x = op.inputs[0]
    value = _const(em, op, 2, "constant_values").reshape(-1)[0] if len(op.inputs) > 2 else 0
    t = em.tensor(x)
    if t.type_name == "FLOAT32":
        v = em.b.add_scalar(T.FLOAT32, float(value))
    elif t.type_name == "FLOAT16":
        v = em.b.add_scalar(T.FLOAT16, float(value))
    else:
        v = em.i32(int(value))
    em.op(O.PAD_V2, [em.operand(x), em.operand(op.inputs[1]), v], [em.output(op.outputs[0])])


def _mirror_pad(em: Emitter, op: Operator) -> None:
    em.op(O.MIRROR_PAD, [em.operand(op.inputs[0]), em.operand(op.inputs[1]), em.i32(_opt(op, "Mode", 0))],
          [em.output(op.outputs[0])])


def _resize(op_type: O):
    def convert(em: Emitter, op: Operator) -> None:
        h, w = (int(v) for v in _const(em, op, 1, "size").reshape(-1)[:2])
        align, half = bool(_opt(op, "AlignCorners", False)), bool(_opt(op, "HalfPixelCenters", False))
        em.op(op_type, [em.operand(op.inputs[0]), em.i32(w), em.i32(h), em.boolean(False), em.boolean(align),
                        em.boolean(half)], [em.output(op.outputs[0])])
    return convert


def _strided_slice(em: Emitter, op: Operator) -> None:
    """STRIDED_SLICE.  TF Lite ignores the end (and the masks) of a shrunk axis, taking the element at
    begin; NNAPI wants that axis written as a slice of one, [begin, begin + 1): rewritten so when
    begin is a constant."""
    if _opt(op, "EllipsisMask", 0) or _opt(op, "NewAxisMask", 0):
        raise Unsupported("ellipsis_mask / new_axis_mask")
    masks = [_opt(op, "BeginMask", 0), _opt(op, "EndMask", 0), _opt(op, "ShrinkAxisMask", 0)]
    inputs = [em.operand(i) for i in op.inputs[:4]]
    begin, end = em.value(op.inputs[1]), em.value(op.inputs[2])
    if masks[2] and begin is not None and end is not None:
        dims = _known_shape(em, op.inputs[0])
        begin, end = np.asarray(begin, np.int64).reshape(-1).copy(), np.asarray(end, np.int64).reshape(-1).copy()
        for axis in range(len(begin)):
            if masks[2] >> axis & 1:
                first = begin[axis] + dims[axis] if begin[axis] < 0 else begin[axis]
                begin[axis], end[axis] = first, first + 1
                masks[0] &= ~(1 << axis)
                masks[1] &= ~(1 << axis)
        inputs[1], inputs[2] = em.i32_vector(begin), em.i32_vector(end)
    em.op(O.STRIDED_SLICE, inputs + [em.i32(m) for m in masks], [em.output(op.outputs[0])])


def _gather(em: Emitter, op: Operator) -> None:
    """GATHER; a scalar index (an NNAPI [1] tensor, which keeps the axis) through a RESHAPE that drops
    the axis, as TF Lite's output does."""
    if _opt(op, "BatchDims", 0):
        raise Unsupported("batch_dims")
    params, indices = op.inputs
    axis = _opt(op, "Axis", 0)
    args = [em.operand(params), em.i32(axis), em.operand(indices)]
    if len(em.tensor(indices).shape) != 0:
        em.op(O.GATHER, args, [em.output(op.outputs[0])])
        return
    dims = _known_shape(em, params)
    axis %= len(dims)
    kept = dims[:axis] + [1] + dims[axis + 1:]
    picked = em.like(params, shape=kept)
    em.op(O.GATHER, args, [picked])
    em.op(O.RESHAPE, [picked, em.i32_vector(dims[:axis] + dims[axis + 1:] or [1])], [em.output(op.outputs[0])])


def _split(em: Emitter, op: Operator) -> None:
    axis = int(_const(em, op, 0, "axis").reshape(-1)[0])
    em.op(O.SPLIT, [em.operand(op.inputs[1]), em.i32(axis), em.i32(_opt(op, "NumSplits", len(op.outputs)))],
          [em.output(o) for o in op.outputs])


def _pack(em: Emitter, op: Operator) -> None:
    """PACK; of TF Lite scalars (NNAPI [1] tensors) a concatenation into a vector, folded when every
    scalar is a constant."""
    if all(len(em.tensor(i).shape) == 0 for i in op.inputs):
        values = [em.value(i) for i in op.inputs]
        if all(v is not None for v in values):
            dtype = TENSOR_DTYPES.get(em.tensor(op.outputs[0]).type, np.float32)
            em.folded[op.outputs[0]] = np.asarray([np.asarray(v).reshape(-1)[0] for v in values], dtype)
        elif em.tensor(op.inputs[0]).type_name in ("INT32", "INT64"):
            _concatenate_int32(em, op, 0)
        else:
            _unfused_then(em, op, O.CONCATENATION, [em.operand(i) for i in op.inputs] + [em.i32(0)])
        return
    rank = len(em.shape_of(op.outputs[0]))
    em.op(O.PACK, [em.i32(_opt(op, "Axis", 0) % rank)] + [em.operand(i) for i in op.inputs],
          [em.output(op.outputs[0])])


def _known_shape(em: Emitter, i: int) -> list[int]:
    """The dimensions of tensor ``i``, all known at import (or Unsupported)."""
    t = em.tensor(i)
    dims = list(em.known_dims(i))
    if any(d < 0 for d in dims):
        raise Unsupported(f"tensor {i} ({t.name}) has dimensions known only at execution {dims}")
    return dims


def _shape(em: Emitter, op: Operator) -> None:
    """SHAPE of a tensor whose dimensions are known at import: a constant."""
    em.folded[op.outputs[0]] = np.asarray(_known_shape(em, op.inputs[0]), np.int32)


def _rank(em: Emitter, op: Operator) -> None:
    """RANK: TF Lite ranks are always known at import, so a constant."""
    em.folded[op.outputs[0]] = np.asarray(len(em.tensor(op.inputs[0]).shape), np.int32)


def _zeros_like(em: Emitter, op: Operator) -> None:
    """ZEROS_LIKE of a tensor of known dimensions: a constant."""
    dims = _known_shape(em, op.inputs[0])
    em.folded[op.outputs[0]] = np.zeros(dims, TENSOR_DTYPES.get(em.tensor(op.inputs[0]).type, np.float32))


def _fill(em: Emitter, op: Operator) -> None:
    value = _const(em, op, 1, "fill value").reshape(-1)[0]
    kind = em.tensor(op.outputs[0]).type_name
    scalar = {"FLOAT32": T.FLOAT32, "FLOAT16": T.FLOAT16, "INT32": T.INT32}.get(kind)
    if scalar is None:
        raise Unsupported(f"FILL of {kind}")
    dims = em.value(op.inputs[0])
    dims_operand = em.i32_vector(dims) if dims is not None else em.operand(op.inputs[0])
    em.op(O.FILL, [dims_operand, em.b.add_scalar(scalar, value)], [em.output(op.outputs[0])])


def _broadcast_to(em: Emitter, op: Operator) -> None:
    """BROADCAST_TO a constant shape: RESHAPE to the target rank (leading ones), then TILE."""
    target = [int(d) for d in _const(em, op, 1, "shape").reshape(-1)]
    dims = _known_shape(em, op.inputs[0])
    dims = [1] * (len(target) - len(dims)) + dims
    x = em.operand(op.inputs[0])
    if len(dims) != len(em.tensor(op.inputs[0]).shape):
        reshaped = em.like(op.inputs[0], shape=dims)
        em.op(O.RESHAPE, [x, em.i32_vector(dims)], [reshaped])
        x = reshaped
    multiples = [t if d == 1 else 1 for d, t in zip(dims, target)]
    em.op(O.TILE, [x, em.i32_vector(multiples)], [em.output(op.outputs[0])])


def _split_v(em: Emitter, op: Operator) -> None:
    """SPLIT_V (sizes may hold one −1): one SLICE per output."""
    sizes = [int(v) for v in _const(em, op, 1, "size_splits").reshape(-1)]
    dims = _known_shape(em, op.inputs[0])
    axis = int(_const(em, op, 2, "axis").reshape(-1)[0]) % len(dims)
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = dims[axis] - sum(v for v in sizes if v != -1)
    begin = 0
    x = em.operand(op.inputs[0])
    for out, size in zip(op.outputs, sizes):
        starts, lengths = [0] * len(dims), [-1] * len(dims)
        starts[axis], lengths[axis] = begin, size
        em.op(O.SLICE, [x, em.i32_vector(starts), em.i32_vector(lengths)], [em.output(out)])
        begin += size


def _unpack(em: Emitter, op: Operator) -> None:
    """UNPACK: SPLIT into ones along the axis, then RESHAPE each piece without it."""
    dims = em.shape_of(op.inputs[0])
    axis = _opt(op, "Axis", 0) % len(dims)
    pieces = [em.like(op.inputs[0], shape=dims[:axis] + [1] + dims[axis + 1:]) for _ in op.outputs]
    em.op(O.SPLIT, [em.operand(op.inputs[0]), em.i32(axis), em.i32(len(op.outputs))], pieces)
    out_dims = _known_shape(em, op.outputs[0]) if op.outputs else []
    for piece, out in zip(pieces, op.outputs):
        em.op(O.RESHAPE, [piece, em.i32_vector(out_dims or [1])], [em.output(out)])


def _arg(op_type: O):
    def convert(em: Emitter, op: Operator) -> None:
        axis = int(_const(em, op, 1, "axis").reshape(-1)[0])
        em.op(op_type, [em.operand(op.inputs[0]), em.i32(axis)], [em.output(op.outputs[0])])
    return convert


def _topk(em: Emitter, op: Operator) -> None:
    k = int(_const(em, op, 1, "k").reshape(-1)[0])
    em.op(O.TOPK_V2, [em.operand(op.inputs[0]), em.i32(k)], [em.output(o) for o in op.outputs])


def _reverse(em: Emitter, op: Operator) -> None:
    """REVERSE_V2: one NNAPI REVERSE per axis."""
    rank = len(em.shape_of(op.inputs[0]))
    axes = sorted({int(a) % rank for a in _const(em, op, 1, "axis").reshape(-1)})
    x = em.operand(op.inputs[0])
    for k, axis in enumerate(axes):
        out = em.output(op.outputs[0]) if k == len(axes) - 1 else em.like(op.inputs[0])
        em.op(O.REVERSE, [x, em.i32_vector([axis])], [out])
        x = out
    if not axes:
        em.op(O.RESHAPE, [x, em.i32_vector(em.shape_of(op.inputs[0]))], [em.output(op.outputs[0])])


def _block(op_type: O):
    def convert(em: Emitter, op: Operator) -> None:
        em.op(op_type, [em.operand(op.inputs[0]), em.i32(_opt(op, "BlockSize"))], [em.output(op.outputs[0])])
    return convert


def _as_4d(em: Emitter, i: int, operand: int, dims: list[int]) -> tuple[int, list[int]]:
    """A 3-D [N, W, C] tensor as NNAPI's 4-D [N, 1, W, C] (TF Lite's one-spatial-dimension form)."""
    if len(dims) == 4:
        return operand, dims
    if len(dims) != 3:
        raise Unsupported(f"rank {len(dims)} input (NNAPI takes 4-D)")
    wide = [dims[0], 1, dims[1], dims[2]]
    out = em.like(i, shape=wide)
    em.op(O.RESHAPE, [operand, em.i32_vector(wide)], [out])
    return out, wide


def _block_and_pairs(em: Emitter, op: Operator, rank: int, what: str) -> tuple[list[int], np.ndarray]:
    block = [int(v) for v in _const(em, op, 1, "block_shape").reshape(-1)]
    pairs = _const(em, op, 2, what).reshape(-1, 2).astype(np.int64)
    if rank == 3:
        block, pairs = [1] + block, np.concatenate([np.zeros((1, 2), np.int64), pairs])
    return block, pairs


def _space_to_batch(em: Emitter, op: Operator) -> None:
    """SPACE_TO_BATCH_ND; a 3-D input (1-D dilated convolutions) through a 4-D view with height 1."""
    x = op.inputs[0]
    dims = _known_shape(em, x)
    block, pads = _block_and_pairs(em, op, len(dims), "paddings")
    operand, wide = _as_4d(em, x, em.operand(x), dims)
    out4 = [wide[0] * block[0] * block[1], (wide[1] + int(pads[0].sum())) // block[0],
            (wide[2] + int(pads[1].sum())) // block[1], wide[3]]
    result = em.output(op.outputs[0]) if len(dims) == 4 else em.like(op.outputs[0], shape=out4)
    em.op(O.SPACE_TO_BATCH_ND, [operand, em.i32_vector(block), em.constant(T.TENSOR_INT32, pads.astype(np.int32))],
          [result])
    if len(dims) == 3:
        em.op(O.RESHAPE, [result, em.i32_vector([out4[0], out4[2], out4[3]])], [em.output(op.outputs[0])])


def _batch_to_space(em: Emitter, op: Operator) -> None:
    """BATCH_TO_SPACE_ND: NNAPI's has no crops, so a SLICE takes them off; a 3-D input goes through a
    4-D view with height 1."""
    x = op.inputs[0]
    dims = _known_shape(em, x)
    block, crops = _block_and_pairs(em, op, len(dims), "crops")
    operand, wide = _as_4d(em, x, em.operand(x), dims)
    full = [wide[0] // (block[0] * block[1]), wide[1] * block[0], wide[2] * block[1], wide[3]]
    cropped = [full[0], full[1] - int(crops[0].sum()), full[2] - int(crops[1].sum()), full[3]]
    direct = len(dims) == 4 and not crops.any()
    spread = em.output(op.outputs[0]) if direct else em.like(op.outputs[0], shape=full)
    em.op(O.BATCH_TO_SPACE_ND, [operand, em.i32_vector(block)], [spread])
    if direct:
        return
    if crops.any():
        sliced = em.output(op.outputs[0]) if len(dims) == 4 else em.like(op.outputs[0], shape=cropped)
        em.op(O.SLICE, [spread, em.i32_vector([0, int(crops[0, 0]), int(crops[1, 0]), 0]), em.i32_vector(cropped)],
              [sliced])
        spread = sliced
    if len(dims) == 3:
        em.op(O.RESHAPE, [spread, em.i32_vector([cropped[0], cropped[2], cropped[3]])], [em.output(op.outputs[0])])


def _cast(em: Emitter, op: Operator) -> None:
    _direct(O.CAST)(em, op)


# ---- lookups and hashing ---------------------------------------------------------------------------

def _embedding_lookup(em: Emitter, op: Operator) -> None:
    """EMBEDDING_LOOKUP (lookup, value); a quantized constant table behind a float output (TF Lite's
    hybrid kernel) is dequantized at import."""
    _float_weights(em, op, [1], op.outputs[0])
    em.op(O.EMBEDDING_LOOKUP, [em.operand(op.inputs[0]), em.operand(op.inputs[1])], [em.output(op.outputs[0])])


def _hashtable_lookup(em: Emitter, op: Operator) -> None:
    """HASHTABLE_LOOKUP (lookup, key, value) -> (output, hits); TF Lite's hits tensor is plain uint8,
    NNAPI's a TENSOR_QUANT8_ASYMM of scale 1, zero point 0."""
    hits = op.outputs[1]
    if hits not in em.operands:
        em.operands[hits] = em.b.add_operand(T.TENSOR_QUANT8_ASYMM, em.shape_of(hits), 1.0, 0)
    em.op(O.HASHTABLE_LOOKUP, [em.operand(i) for i in op.inputs[:3]],
          [em.output(op.outputs[0]), em.output(hits)])


#: TF Lite LSHProjectionType -> NNAPI LSH_PROJECTION type (TF Lite's SPARSE offsets each hash
#: function's signature by i * 2^num_bits, which NNAPI calls SPARSE; NNAPI's 1 is the older form)
LSH_TYPES = {1: 3, 2: 2}


def _lsh_projection(em: Emitter, op: Operator) -> None:
    kind = _opt(op, "Type", 0)
    if kind not in LSH_TYPES:
        raise Unsupported(f"LSH projection type {kind} is neither SPARSE nor DENSE")
    weight = op.inputs[2] if len(op.inputs) > 2 else -1
    em.op(O.LSH_PROJECTION, [em.operand(op.inputs[0]), em.operand(op.inputs[1]), em.optional(weight),
                             em.i32(LSH_TYPES[kind])], [em.output(op.outputs[0])])


# ---- recurrent networks ------------------------------------------------------------------------------
# TF Lite keeps recurrent state in variable tensors; the import starts each execution from the zero
# state (see Emitter.value) and adds the state outputs NNAPI requires as temporaries.

def _float_weights(em: Emitter, op: Operator, positions, like: int) -> None:
    """Quantized constant weights of a float operator (TF Lite's hybrid kernels) become float32
    constants: the import dequantizes them, so the operation runs in float."""
    if em.tensor(like).type_name not in ("FLOAT32", "FLOAT16"):
        return
    for k in positions:
        i = op.inputs[k] if k < len(op.inputs) else -1
        if i < 0 or i in em.folded:
            continue
        value = em.value(i)
        if value is not None and value.dtype in (np.int8, np.uint8) and em.tensor(i).quantization is not None:
            em.folded[i] = _dequantized(em.tensor(i), value)


def _inputs(em: Emitter, op: Operator, positions) -> list[int]:
    """Operands of TF Lite inputs ``positions`` (NO_VALUE, typed like input 0, for an omitted one or
    a position past the operator's inputs)."""
    otype = T.TENSOR_FLOAT16 if em.tensor(op.inputs[0]).type_name == "FLOAT16" else T.TENSOR_FLOAT32
    return [em.optional(op.inputs[k] if k < len(op.inputs) else -1, otype) for k in positions]


def _temporary(em: Emitter, like: int, dims) -> int:
    return em.b.add_operand(T.TENSOR_FLOAT16 if em.tensor(like).type_name == "FLOAT16" else T.TENSOR_FLOAT32,
                            [int(d) for d in dims])


def _lstm_sizes(em: Emitter, op: Operator, first: int) -> tuple[int, int, bool]:
    """(units, output size, CIFG) of the LSTM cell whose tensors start at input ``first``."""
    units = em.shape_of(op.inputs[first + 3])[0]           # input-to-output weights [U, I]
    output = em.shape_of(op.inputs[first + 7])[1]          # recurrent-to-output weights [U, O]
    return units, output, op.inputs[first] < 0


def _lstm_scalars(em: Emitter, op: Operator) -> list[int]:
    x = op.inputs[0]
    return [em.i32(_opt(op, "FusedActivationFunction", 0)), em.float_scalar(_opt(op, "CellClip", 0.0), x),
            em.float_scalar(_opt(op, "ProjClip", 0.0), x)]


def _lstm(em: Emitter, op: Operator) -> None:
    """LSTM (full kernel): 20 cell tensors, the two state tensors, optional layer-norm weights."""
    if _opt(op, "KernelType", 0) != 0:
        raise Unsupported("the BASIC LSTM kernel has no NNAPI equivalent")
    if _integer_lstm_input(em, op):
        _integer_lstm(em, op)
        return
    _float_weights(em, op, range(1, 24), op.inputs[0])
    batch = em.shape_of(op.inputs[0])[0]
    units, out_size, cifg = _lstm_sizes(em, op, 1)
    ins = _inputs(em, op, range(20)) + _lstm_scalars(em, op)
    if len(op.inputs) > 20 and any(i >= 0 for i in op.inputs[20:24]):
        ins += _inputs(em, op, range(20, 24))
    x = op.inputs[0]
    outs = [_temporary(em, x, [batch, units * (3 if cifg else 4)]), _temporary(em, x, [batch, out_size]),
            _temporary(em, x, [batch, units]), em.output(op.outputs[0])]
    em.op(O.LSTM, ins, outs)


def _sequence_lstm(em: Emitter, op: Operator) -> None:
    """UNIDIRECTIONAL_SEQUENCE_LSTM: LSTM's 20 + 4 tensors, with time_major between the clips and
    the layer-norm weights."""
    if _integer_lstm_input(em, op):
        _integer_sequence_lstm(em, op)
        return
    _float_weights(em, op, range(1, 24), op.inputs[0])
    ins = (_inputs(em, op, range(20)) + _lstm_scalars(em, op) + [em.boolean(_opt(op, "TimeMajor", False))]
           + _inputs(em, op, range(20, 24)))
    em.op(O.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [em.output(op.outputs[0])])


# ---- integer LSTM --------------------------------------------------------------------------------------
# TF Lite's 8x8→16 integer LSTM (int8 activations and weights, int32 biases, int16 cell state and
# layer-norm weights) is NNAPI's QUANTIZED_LSTM, one time step; both take the 24 tensors in the same
# order.  The operator's five intermediates carry what its kernel (lstm.cc,
# PopulateQuantizedLstmParams8x8_16) reads from them: the scales of the input, forget, cell and output
# gate pre-activations (with layer norm only: without, TF Lite fixes them at Q3.12) and the hidden
# state's scale and zero point.

#: the gate pre-activation scale of TF Lite's integer LSTM without layer norm (Q3.12)
GATE_SCALE_Q3_12 = 2.0 ** -12
#: NNAPI types of the optional tensor inputs of QUANTIZED_LSTM (TF Lite's positions are the same):
#: the CIFG-omitted input gate's weights and bias, peephole, projection and layer-norm weights
QLSTM_OPTIONAL_TYPES = {**dict.fromkeys((QL_W_X[0], QL_W_H[0], QL_W_PROJ), T.TENSOR_QUANT8_SYMM),
                        **dict.fromkeys((*(k for k in QL_W_C if k is not None), *QL_LN), T.TENSOR_QUANT16_SYMM),
                        **dict.fromkeys((QL_BIAS[0], QL_B_PROJ), T.TENSOR_INT32)}
#: the most constant input columns that carry the gate biases of an LSTM without layer norm
MAX_BIAS_COLUMNS = 64


def _integer_lstm_input(em: Emitter, op: Operator) -> bool:
    """Whether an LSTM is TF Lite's integer one (int8 input); other non-float inputs are refused."""
    kind = em.tensor(op.inputs[0]).type_name
    if kind in ("FLOAT32", "FLOAT16"):
        return False
    if kind != "INT8":
        raise Unsupported(f"an LSTM with {kind} activations has no NNAPI equivalent (QUANTIZED_LSTM takes int8 "
                          f"activations with an int16 cell state)")
    return True


def _quant(em: Emitter, i: int, what: str, kind: str | None):
    """The per-tensor quantization of tensor ``i``, which must be of type ``kind`` (None: any)."""
    t = em.tensor(i)
    q = t.quantization
    if kind not in (None, t.type_name) or q is None or len(q.scales) != 1 or not q.scales[0] > 0:
        raise Unsupported(f"{what} ({t.name}) must be {kind or 'quantized'} with one positive scale, got "
                          f"{t.type_name} {'unquantized' if q is None else f'with scales {q.scales}'}")
    return q


def _lstm_state(em: Emitter, op: Operator, k: int, dims: list[int]) -> int:
    """The initial value of state input ``k`` (a variable tensor: zero, or the values it stores) as a
    constant of ``dims`` (TF Lite accepts any shape of that many elements)."""
    i = op.inputs[k]
    value = em.value(i)
    if value is None or value.size != int(np.prod(dims)):
        raise Unsupported(f"state input {k} must be a variable tensor of {int(np.prod(dims))} values")
    otype, scale, zp, _ = em.operand_type(em.tensor(i))
    return em.constant(otype, value.reshape(dims), scale, zp)


def _bias_columns(zero_point: int, biases: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Constant input columns and, per gate, weight columns whose products are the gate biases
    exactly: QUANTIZED_LSTM adds gate biases only inside layer norm, TF Lite without layer norm adds
    them to the input matmul.  A column's value less the input zero point is ``a``: one column of
    a = ±1, then columns of |a| ≥ 128; bias = ±1·r + a·Σw with r and each w in [−127, 127].  Returns
    (the int8 column values, the [U, columns] weights of each gate); no columns when every bias is 0."""
    if not any(b.any() for b in biases):
        return np.zeros(0, np.int8), []
    unit = 1 if zero_point < 127 else -1
    big = max(127 - zero_point, -128 - zero_point, key=abs)
    multiples = [np.round(b / big).astype(np.int64) for b in biases]
    count = max(-(-int(np.abs(m).max()) // 127) for m in multiples)
    if count + 1 > MAX_BIAS_COLUMNS:
        raise Unsupported(f"gate biases up to {max(int(np.abs(b).max()) for b in biases)} need {count + 1} "
                          f"constant input columns, more than {MAX_BIAS_COLUMNS}")
    weights = []
    for b, rest in zip(biases, multiples):
        columns = [(b - big * rest) * unit]
        for _ in range(count):
            columns.append(np.clip(rest, -127, 127))
            rest = rest - columns[-1]
        weights.append(np.stack(columns, axis=1))
    return np.asarray([zero_point + unit] + [zero_point + big] * count, np.int8), weights


def _integer_lstm_cell(em: Emitter, op: Operator, batch: int, input_size: int):
    """A TF Lite integer LSTM cell as QUANTIZED_LSTM steps.  Returns (``step(x, h_prev, c_prev, y)`` →
    (h_out, c_out, y), which emits one time step (``y``: the output operand, a new temporary when
    None), the initial (h, c) state operands, ``columns``: int8 values the input must have appended
    to its last dimension (the gate biases without layer norm; empty when none))."""
    if len(op.inputs) not in (20, 24):
        raise Unsupported(f"the full LSTM kernel has 20 or 24 inputs, this one {len(op.inputs)}")
    count = len(op.intermediates)
    if count != 5:
        raise Unsupported("TF Lite's 8x8→8 integer LSTM (12 intermediates) has no NNAPI equivalent" if count == 12
                          else f"an int8 LSTM needs the 5 intermediates of TF Lite's 8x8→16 integer kernel (the gate "
                               f"and hidden-state quantization), this one has {count}")
    x, h_state, c_state, out = op.inputs[0], op.inputs[18], op.inputs[19], op.outputs[0]
    x_q = _quant(em, x, "the input", "INT8")
    _quant(em, h_state, "the output state", "INT8")
    _quant(em, c_state, "the cell state", "INT16")
    _quant(em, out, "the output", "INT8")
    units, out_size, _ = _lstm_sizes(em, op, 1)
    layer_norm = len(op.inputs) == 24 and op.inputs[21] >= 0
    projection = op.inputs[16] >= 0
    if op.inputs[11] >= 0 and out_size != units:
        raise Unsupported(f"peephole weights with an output size ({out_size}) other than num_units ({units}): TF "
                          f"Lite's integer kernel applies the peephole over the output size")
    hidden = _quant(em, op.intermediates[4], "the hidden-state intermediate (4)", None)
    gate_scales = [_quant(em, i, f"intermediate {g}", None).scales[0] if layer_norm else GATE_SCALE_Q3_12
                   for g, i in enumerate(op.intermediates[:4])]
    biases = []
    if not layer_norm:
        for k in QL_BIAS:
            bias = _const(em, op, k, "gate bias") if op.inputs[k] >= 0 else np.zeros(units)
            if bias.shape != (units,):
                raise Unsupported(f"gate bias (input {k}) has shape {list(bias.shape)}, expected [{units}]")
            biases.append(bias.astype(np.int64))
    columns, bias_weights = _bias_columns(x_q.zero_points[0], biases)
    fixed = {}
    for k in (*range(1, 18), *range(20, 24)):
        i = op.inputs[k] if k < len(op.inputs) else -1
        if i < 0:
            if k not in QLSTM_OPTIONAL_TYPES:
                raise Unsupported(f"input {k} is required")
            otype = QLSTM_OPTIONAL_TYPES[k]    # a quantized type needs a scale even when omitted
            fixed[k] = em.b.add_operand(otype, [], 0.0 if otype == T.TENSOR_INT32 else 1.0,
                                        lifetime=OperandLifeTime.NO_VALUE)
        elif k in (*QL_W_X, *QL_W_H, QL_W_PROJ):
            value = _const(em, op, k, "weights")
            if k in QL_W_X and columns.size:    # input-to-gate weights: the bias columns' weights
                if value.shape != (units, input_size):
                    raise Unsupported(f"input-to-gate weights (input {k}) have shape {list(value.shape)}, expected "
                                      f"[{units}, {input_size}]")
                value = np.concatenate([value, bias_weights[QL_W_X.index(k)]], axis=1)
            scale = _quant(em, i, f"weights (input {k})", "INT8").scales[0]
            fixed[k] = em.constant(T.TENSOR_QUANT8_SYMM, value.astype(np.int8), scale)
        else:
            fixed[k] = em.operand(i)
    # TF Lite clips the projection at proj_clip / output scale; QUANTIZED_LSTM divides by the projection
    # weights' scale: the clip given is one that truncates to TF Lite's quantized clip
    proj_clip = float(_opt(op, "ProjClip", 0.0))
    if proj_clip > 0 and projection:
        q_clip = int(min(max(np.float32(proj_clip) / np.float32(em.tensor(out).quantization.scales[0]), -128.0),
                         127.0))
        proj_clip = (q_clip + 0.5) * em.tensor(op.inputs[16]).quantization.scales[0] if q_clip > 0 else 0.0
    # QUANTIZED_LSTM subtracts its hidden zero point from the hidden state (adding it back inside the
    # projection), as TF Lite's kernel does with projection; without, TF Lite adds it
    hidden_zp = hidden.zero_points[0] if projection else -hidden.zero_points[0]
    if not -128 <= hidden_zp <= 127:
        raise Unsupported(f"hidden-state zero point {hidden.zero_points[0]}: without projection TF Lite adds it, and "
                          f"QUANTIZED_LSTM subtracts an int8 zero point")
    scalars = [em.b.add_scalar(T.FLOAT32, float(v)) for v in (_opt(op, "CellClip", 0.0), proj_clip, *gate_scales)]
    scalars += [em.i32(hidden_zp), em.b.add_scalar(T.FLOAT32, float(hidden.scales[0]))]

    def step(x_step: int, h_prev: int, c_prev: int, y: int | None = None) -> tuple[int, int, int]:
        ins = [x_step, *(fixed[k] for k in range(1, 18)), h_prev, c_prev, *(fixed[k] for k in range(20, 24)),
               *scalars]
        outs = [em.like(h_state, shape=[batch, out_size]), em.like(c_state, shape=[batch, units]),
                em.like(out, shape=[batch, out_size]) if y is None else y]
        reason = em.refusal(O.QUANTIZED_LSTM, ins, outs)
        if reason:
            raise Unsupported(reason)
        em.op(O.QUANTIZED_LSTM, ins, outs)
        return outs[0], outs[1], outs[2]

    state = _lstm_state(em, op, 18, [batch, out_size]), _lstm_state(em, op, 19, [batch, units])
    return step, state, columns


def _with_columns(em: Emitter, i: int, operand: int, dims: list[int], columns: np.ndarray) -> tuple[int, list[int]]:
    """Tensor ``i`` (``operand``, ``dims``) with the int8 ``columns`` appended to its last dimension
    (CONCATENATION with a constant of the tensor's quantization); unchanged without columns."""
    if not columns.size:
        return operand, dims
    otype, scale, zp, _ = em.operand_type(em.tensor(i))
    wide = dims[:-1] + [dims[-1] + columns.size]
    block = em.constant(otype, np.broadcast_to(columns, dims[:-1] + [columns.size]).copy(), scale, zp)
    result = em.like(i, shape=wide)
    em.op(O.CONCATENATION, [operand, block, em.i32(len(dims) - 1)], [result])
    return result, wide


def _integer_lstm(em: Emitter, op: Operator) -> None:
    """TF Lite's integer LSTM: one QUANTIZED_LSTM step from the zero state."""
    x = op.inputs[0]
    dims = list(em.known_dims(x))
    if len(dims) != 2 or min(dims) <= 0:
        raise Unsupported(f"the input must be [batch, input] with known sizes, got {dims}")
    step, (h, c), columns = _integer_lstm_cell(em, op, dims[0], dims[1])
    step(_with_columns(em, x, em.operand(x), dims, columns)[0], h, c, em.output(op.outputs[0]))


def _integer_sequence_lstm(em: Emitter, op: Operator) -> None:
    """TF Lite's integer UNIDIRECTIONAL_SEQUENCE_LSTM, unrolled: the input split along time (through a
    2-D view in which every step is a slice of one axis), a QUANTIZED_LSTM per step, each step's state
    feeding the next, and the step outputs concatenated back into TF Lite's output."""
    x, out = op.inputs[0], op.outputs[0]
    dims = list(em.known_dims(x))
    if len(dims) != 3 or min(dims) <= 0:
        raise Unsupported(f"the input must be 3-D with sizes known at import (the time steps are unrolled), "
                          f"got {dims}")
    time_major = bool(_opt(op, "TimeMajor", False))
    steps, batch = (dims[0], dims[1]) if time_major else (dims[1], dims[0])
    step, (h, c), columns = _integer_lstm_cell(em, op, batch, dims[2])
    wide, dims = _with_columns(em, x, em.operand(x), dims, columns)
    # time-major [T, B, I] as [T·B, I] splits along axis 0, batch-major [B, T, I] as [B, T·I] along axis 1
    axis = 0 if time_major else 1
    flat = [steps * batch, dims[2]] if time_major else [batch, steps * dims[2]]
    view = em.like(x, shape=flat)
    em.op(O.RESHAPE, [wide, em.i32_vector(flat)], [view])
    pieces = [view]
    if steps > 1:
        pieces = [em.like(x, shape=[batch, dims[2]]) for _ in range(steps)]
        em.op(O.SPLIT, [view, em.i32(axis), em.i32(steps)], pieces)
    outputs = []
    for piece in pieces:
        h, c, y = step(piece, h, c)
        outputs.append(y)
    out_size = em.b.operand(outputs[0]).dimensions[1]
    joined = outputs[0]
    if steps > 1:
        joined = em.like(out, shape=[steps * batch, out_size] if time_major else [batch, steps * out_size])
        em.op(O.CONCATENATION, outputs + [em.i32(axis)], [joined])
    shape = [steps, batch, out_size] if time_major else [batch, steps, out_size]
    em.op(O.RESHAPE, [joined, em.i32_vector(shape)], [em.output(out)])


def _bidirectional_lstm(em: Emitter, op: Operator) -> None:
    """BIDIRECTIONAL_SEQUENCE_LSTM: TF Lite's 48 inputs are NNAPI's 0–47; then the scalars and
    (absent) layer-norm weights."""
    _float_weights(em, op, range(1, 48), op.inputs[0])
    merge = bool(_opt(op, "MergeOutputs", False))
    ins = (_inputs(em, op, range(48)) + _lstm_scalars(em, op)
           + [em.boolean(merge), em.boolean(_opt(op, "TimeMajor", True))] + _inputs(em, op, range(48, 56)))
    em.op(O.BIDIRECTIONAL_SEQUENCE_LSTM, ins, [em.output(o) for o in op.outputs[:1 if merge else 2]])


def _rnn(em: Emitter, op: Operator) -> None:
    """RNN (input, weights, recurrent weights, bias, hidden state) -> output."""
    _float_weights(em, op, range(1, 4), op.inputs[0])
    h = em.shape_of(op.inputs[4])
    em.op(O.RNN, _inputs(em, op, range(5)) + [em.i32(_opt(op, "FusedActivationFunction", 0))],
          [_temporary(em, op.inputs[0], h), em.output(op.outputs[0])])


def _sequence_rnn(em: Emitter, op: Operator) -> None:
    _float_weights(em, op, range(1, 4), op.inputs[0])
    em.op(O.UNIDIRECTIONAL_SEQUENCE_RNN, _inputs(em, op, range(5)) + [
        em.i32(_opt(op, "FusedActivationFunction", 0)), em.i32(1 if _opt(op, "TimeMajor", False) else 0)],
        [em.output(op.outputs[0])])


def _bidirectional_rnn(em: Emitter, op: Operator) -> None:
    _float_weights(em, op, [1, 2, 3, 5, 6, 7, 10, 11], op.inputs[0])
    merge = bool(_opt(op, "MergeOutputs", False))
    em.op(O.BIDIRECTIONAL_SEQUENCE_RNN, _inputs(em, op, range(12)) + [
        em.i32(_opt(op, "FusedActivationFunction", 0)), em.boolean(_opt(op, "TimeMajor", True)), em.boolean(merge)],
        [em.output(o) for o in op.outputs[:1 if merge else 2]])


def _svdf(em: Emitter, op: Operator) -> None:
    """SVDF (input, weights_feature, weights_time, bias, state) -> output."""
    _float_weights(em, op, range(1, 4), op.inputs[0])
    state = em.shape_of(op.inputs[4])
    em.op(O.SVDF, _inputs(em, op, range(5)) + [em.i32(_opt(op, "Rank", 1)),
                                                em.i32(_opt(op, "FusedActivationFunction", 0))],
          [_temporary(em, op.inputs[0], state), em.output(op.outputs[0])])


# ---- detection ---------------------------------------------------------------------------------------

def _float_tensor(em: Emitter, i: int) -> int:
    """Tensor ``i`` as float32: itself, a constant dequantized at import, or a DEQUANTIZE of it."""
    t = em.tensor(i)
    if t.type_name in ("FLOAT32", "FLOAT16"):
        return em.operand(i)
    value = em.value(i)
    if value is not None:
        em.folded[i] = _dequantized(t, value)
        return em.operand(i)
    tmp = em.b.add_operand(T.TENSOR_FLOAT32, em.shape_of(i))
    em.op(O.DEQUANTIZE, [em.operand(i)], [tmp])
    return tmp


def _detection_postprocess(em: Emitter, op: Operator) -> None:
    """TF Lite's TFLite_Detection_PostProcess custom operator (SSD models): inputs (box encodings,
    class predictions with the background first, anchors), outputs (boxes, classes, scores, count) with
    classes and count in float32; options a FlexBuffer map.  NNAPI's DETECTION_POSTPROCESSING takes
    (scores, deltas, anchors) in float and writes (scores, boxes, classes I32, count I32); labels
    exclude the background as TF Lite's do."""
    from flatbuffers import flexbuffers

    try:
        o = flexbuffers.Loads(bytes(op.custom_options))
    except Exception as exc:  # the FlexBuffer decoder raises assorted errors on bad bytes
        raise Unsupported(f"unreadable FlexBuffer options ({type(exc).__name__})") from None
    if not isinstance(o, dict) or "max_detections" not in o:
        raise Unsupported("options lack max_detections")
    regular = bool(o.get("use_regular_nms", False))
    max_det, per_det = int(o["max_detections"]), int(o.get("max_classes_per_detection", 1))
    if regular and per_det != 1:
        raise Unsupported("regular NMS with max_classes_per_detection > 1 has TF Lite's and NNAPI's "
                          "output sizes differ")
    deltas, scores, anchors = (_float_tensor(em, i) for i in op.inputs[:3])
    batch = em.shape_of(op.inputs[1])[0]
    slots = max_det if regular else max_det * per_det
    boxes_out, classes_out, scores_out, count_out = op.outputs[:4]

    def scalar(key: str, default: float) -> int:
        return em.b.add_scalar(T.FLOAT32, float(o.get(key, default)))

    args = [scores, deltas, anchors, scalar("y_scale", 10.0), scalar("x_scale", 10.0), scalar("h_scale", 5.0),
            scalar("w_scale", 5.0), em.boolean(regular), em.i32(max_det), em.i32(per_det),
            em.i32(o.get("detections_per_class", 100)), scalar("nms_score_threshold", 0.0),
            scalar("nms_iou_threshold", 0.0), em.boolean(False)]
    classes_i32 = em.b.add_operand(T.TENSOR_INT32, [batch, slots])
    count_i32 = em.b.add_operand(T.TENSOR_INT32, [batch])
    em.op(O.DETECTION_POSTPROCESSING, args, [em.output(scores_out), em.output(boxes_out), classes_i32, count_i32])
    em.op(O.CAST, [classes_i32], [em.output(classes_out)])
    em.op(O.CAST, [count_i32], [em.output(count_out)])


# ---- control flow --------------------------------------------------------------------------------------

def _if(em: Emitter, op: Operator) -> None:
    then_sg, else_sg = em.subgraph(_opt(op, "ThenSubgraphIndex")), em.subgraph(_opt(op, "ElseSubgraphIndex"))
    em.op(O.IF, [em.operand(op.inputs[0]), then_sg, else_sg] + [em.operand(i) for i in op.inputs[1:]],
          [em.output(o) for o in op.outputs])


def _while(em: Emitter, op: Operator) -> None:
    cond, body = em.subgraph(_opt(op, "CondSubgraphIndex")), em.subgraph(_opt(op, "BodySubgraphIndex"))
    em.op(O.WHILE, [cond, body] + [em.operand(i) for i in op.inputs], [em.output(o) for o in op.outputs])


# ---- operators composed of several NNAPI operations ------------------------------------------------

_SCALAR_TYPES = {"FLOAT32": (T.TENSOR_FLOAT32, np.float32), "FLOAT16": (T.TENSOR_FLOAT16, np.float16),
                 "INT32": (T.TENSOR_INT32, np.int32)}


def _plain_type(em: Emitter, i: int, what: str) -> tuple[T, type]:
    """(operand type, numpy dtype) of an unquantized float or int32 tensor ``i``, else Unsupported."""
    kind = em.tensor(i).type_name
    if kind not in _SCALAR_TYPES:
        raise Unsupported(f"{what} of {kind}")
    return _SCALAR_TYPES[kind]


def _filled(em: Emitter, i: int, dims, value) -> int:
    """A constant of tensor ``i``'s plain type, shape ``dims``, every element ``value``."""
    otype, dtype = _plain_type(em, i, "a constant")
    return em.constant(otype, np.full([int(d) for d in dims], value, dtype))


def _bool_like(em: Emitter, dims) -> int:
    return em.b.add_operand(T.TENSOR_BOOL8, [int(d) for d in dims])


def _cos(em: Emitter, op: Operator) -> None:
    """COS as SIN(x + π/2)."""
    x = op.inputs[0]
    shifted = em.like(x)
    em.op(O.ADD, [em.operand(x), _filled(em, x, [1], np.pi / 2), em.i32(0)], [shifted])
    em.op(O.SIN, [shifted], [em.output(op.outputs[0])])


def _sign(em: Emitter, op: Operator) -> None:
    """SIGN as SELECT(x > 0, 1, SELECT(x < 0, −1, 0)): 0 for 0 and NaN, as TF Lite's (x > 0) − (x < 0)."""
    x = op.inputs[0]
    dims = _known_shape(em, x)
    positive, negative, low = _bool_like(em, dims), _bool_like(em, dims), em.like(x)
    zero = _filled(em, x, [1], 0)
    em.op(O.GREATER, [em.operand(x), zero], [positive])
    em.op(O.LESS, [em.operand(x), zero], [negative])
    em.op(O.SELECT, [negative, _filled(em, x, dims, -1), _filled(em, x, dims, 0)], [low])
    em.op(O.SELECT, [positive, _filled(em, x, dims, 1), low], [em.output(op.outputs[0])])


def _round(em: Emitter, op: Operator) -> None:
    """ROUND, half to even as TF Lite: f = floor(x), d = x − f; f + 1 where d > ½ or (d = ½ and f odd)."""
    x = op.inputs[0]
    _plain_type(em, x, "ROUND")
    dims = em.shape_of(x)
    xo = em.operand(x)
    f, d, f1, h, fh = (em.like(x) for _ in range(5))
    above, tie, odd, odd_tie, up = (_bool_like(em, dims) for _ in range(5))
    em.op(O.FLOOR, [xo], [f])
    em.op(O.SUB, [xo, f, em.i32(0)], [d])
    em.op(O.ADD, [f, _filled(em, x, [1], 1), em.i32(0)], [f1])
    em.op(O.MUL, [f, _filled(em, x, [1], 0.5), em.i32(0)], [h])
    em.op(O.FLOOR, [h], [fh])
    em.op(O.NOT_EQUAL, [fh, h], [odd])
    em.op(O.GREATER, [d, _filled(em, x, [1], 0.5)], [above])
    em.op(O.EQUAL, [d, _filled(em, x, [1], 0.5)], [tie])
    em.op(O.LOGICAL_AND, [tie, odd], [odd_tie])
    em.op(O.LOGICAL_OR, [above, odd_tie], [up])
    em.op(O.SELECT, [up, f1, f], [em.output(op.outputs[0])])


def _floor_mod(em: Emitter, op: Operator) -> None:
    """FLOOR_MOD of INT32 as x − FLOOR_DIV(x, y)·y (exact).  The float form is refused: without an
    exact remainder (fmod) the composition can be off by a whole y next to multiples of y."""
    if em.tensor(op.inputs[0]).type_name != "INT32":
        raise Unsupported(f"FLOOR_MOD of {em.tensor(op.inputs[0]).type_name} (NNAPI has no exact float remainder)")
    a, b = em.operand(op.inputs[0]), em.operand(op.inputs[1])
    q, p = em.like(op.outputs[0]), em.like(op.outputs[0])
    em.op(O.DIV, [a, b, em.i32(0)], [q])
    em.op(O.MUL, [q, b, em.i32(0)], [p])
    em.op(O.SUB, [a, p, em.i32(0)], [em.output(op.outputs[0])])


def _range(em: Emitter, op: Operator) -> None:
    """RANGE of constant start, limit and delta: a constant."""
    start, limit, delta = (_const(em, op, k, name).reshape(-1)[0] for k, name in
                           enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise Unsupported("RANGE with delta 0")
    dtype = TENSOR_DTYPES.get(em.tensor(op.outputs[0]).type, np.float32)
    em.folded[op.outputs[0]] = np.arange(start, limit, delta).astype(dtype)


def _broadcast_args(em: Emitter, op: Operator) -> None:
    """BROADCAST_ARGS of two constant shapes: a constant."""
    a, b = (tuple(int(v) for v in _const(em, op, k, "shape").reshape(-1)) for k in (0, 1))
    try:
        shape = np.broadcast_shapes(a, b)
    except ValueError:
        raise Unsupported(f"shapes {list(a)} and {list(b)} do not broadcast") from None
    em.folded[op.outputs[0]] = np.asarray(shape, TENSOR_DTYPES.get(em.tensor(op.outputs[0]).type, np.int32))


def _select_v2(em: Emitter, op: Operator) -> None:
    """SELECT_V2 (broadcasting): a condition of another shape widened by LOGICAL_AND with a constant
    all-true tensor of the output's shape, values of another shape RESHAPEd and TILEd to it."""
    out = list(np.broadcast_shapes(*(tuple(_known_shape(em, i)) for i in op.inputs)))
    operands = []
    for k, i in enumerate(op.inputs):
        dims = _known_shape(em, i)
        x = em.operand(i)
        if dims != out and k == 0:
            wide = _bool_like(em, out)
            em.op(O.LOGICAL_AND, [x, em.constant(T.TENSOR_BOOL8, np.ones(out, bool))], [wide])
            x = wide
        elif dims != out:
            dims = [1] * (len(out) - len(dims)) + dims
            if len(dims) != len(em.tensor(i).shape):
                reshaped = em.like(i, shape=dims)
                em.op(O.RESHAPE, [x, em.i32_vector(dims)], [reshaped])
                x = reshaped
            tiled = em.like(i, shape=out)
            em.op(O.TILE, [x, em.i32_vector([o if d == 1 else 1 for d, o in zip(dims, out)])], [tiled])
            x = tiled
        operands.append(x)
    em.op(O.SELECT, operands, [em.output(op.outputs[0])])


def _gather_nd(em: Emitter, op: Operator) -> None:
    """GATHER_ND as GATHER along axis 0 of the params with their first K dimensions flattened, at the
    linear index Σ indices[..., k]·stride_k (computed at import for constant indices).  A runtime
    index out of range in one dimension but inside the flattened ones is not detected."""
    params, indices = op.inputs
    pdims, idims = _known_shape(em, params), _known_shape(em, indices)
    k = idims[-1]
    if not 0 < k <= len(pdims):
        raise Unsupported(f"GATHER_ND with index depth {k} for rank {len(pdims)} params")
    strides = [int(np.prod(pdims[j + 1:k])) for j in range(k)]
    flat = em.like(params, shape=[int(np.prod(pdims[:k]))] + pdims[k:])
    em.op(O.RESHAPE, [em.operand(params), em.i32_vector([int(np.prod(pdims[:k]))] + pdims[k:])], [flat])
    lead = idims[:-1] or [1]
    value = em.value(indices)
    if value is not None:
        value = np.asarray(value, np.int64).reshape(-1, k)
        if ((value < 0) | (value >= np.asarray(pdims[:k]))).any():
            raise Unsupported("GATHER_ND index out of range")
        linear = em.constant(T.TENSOR_INT32, (value @ np.asarray(strides)).astype(np.int32).reshape(lead))
    else:
        total = None
        for j in range(k):
            part, scaled = em.like(indices, shape=idims[:-1] + [1]), em.like(indices, shape=idims[:-1] + [1])
            starts = [0] * len(idims)
            starts[-1] = j
            em.op(O.SLICE, [em.operand(indices), em.i32_vector(starts), em.i32_vector(idims[:-1] + [1])], [part])
            em.op(O.MUL, [part, em.constant(T.TENSOR_INT32, np.asarray([strides[j]], np.int32)), em.i32(0)],
                  [scaled])
            if total is not None:
                summed = em.like(indices, shape=idims[:-1] + [1])
                em.op(O.ADD, [total, scaled, em.i32(0)], [summed])
                scaled = summed
            total = scaled
        linear = em.like(indices, shape=lead)
        em.op(O.RESHAPE, [total, em.i32_vector(lead)], [linear])
    if idims[:-1]:
        em.op(O.GATHER, [flat, em.i32(0), linear], [em.output(op.outputs[0])])
    else:
        gathered = em.like(params, shape=[1] + pdims[k:])
        em.op(O.GATHER, [flat, em.i32(0), linear], [gathered])
        em.op(O.RESHAPE, [gathered, em.i32_vector(pdims[k:] or [1])], [em.output(op.outputs[0])])


def _placed_int32(em: Emitter, x: int, like: int, size: int, dims: list[int], axis: int, offset: int) -> int:
    """INT32 ``x`` (``size`` long along ``axis``) placed at ``offset`` along that axis of a new tensor
    of ``dims``, zero elsewhere (what falls outside is dropped): a GATHER with clamped indices, then
    a 0/1 mask (MUL) — NNAPI has no INT32 PAD or CONCATENATION."""
    positions = np.arange(dims[axis])
    index = np.clip(positions - offset, 0, size - 1).astype(np.int32)
    mask_dims = [1] * len(dims)
    mask_dims[axis] = dims[axis]
    mask = ((positions >= offset) & (positions < offset + size)).astype(np.int32).reshape(mask_dims)
    gathered, placed = em.like(like, shape=dims), em.like(like, shape=dims)
    em.op(O.GATHER, [x, em.i32(axis), em.constant(T.TENSOR_INT32, index)], [gathered])
    em.op(O.MUL, [gathered, em.constant(T.TENSOR_INT32, mask), em.i32(0)], [placed])
    return placed


def _shifted(em: Emitter, x: int, like: int, dims: list[int], axis: int, s: int, reverse: bool) -> int:
    """``x`` moved ``s`` places along ``axis`` (towards the end, or the start when ``reverse``), the
    vacated places zero: PAD of a SLICE for floats, :func:`_placed_int32` for INT32."""
    n = dims[axis]
    if em.tensor(like).type_name == "INT32":
        return _placed_int32(em, x, like, n, dims, axis, -s if reverse else s)
    out = em.like(like, shape=dims)
    part_dims = list(dims)
    part_dims[axis] = n - s
    starts = [0] * len(dims)
    starts[axis] = s if reverse else 0
    part = em.like(like, shape=part_dims)
    em.op(O.SLICE, [x, em.i32_vector(starts), em.i32_vector(part_dims)], [part])
    pads = np.zeros((len(dims), 2), np.int32)
    pads[axis, 1 if reverse else 0] = s
    em.op(O.PAD, [part, em.constant(T.TENSOR_INT32, pads)], [out])
    return out


def _cumsum(em: Emitter, op: Operator) -> None:
    """CUMSUM along a constant axis as a scan of ⌈log₂ n⌉ shifted additions (exclusive: one more
    shift; reverse: shifts towards the start)."""
    x = op.inputs[0]
    otype, dtype = _plain_type(em, x, "CUMSUM")
    dims = _known_shape(em, x)
    axis = int(_const(em, op, 1, "axis").reshape(-1)[0]) % len(dims)
    exclusive, reverse = bool(_opt(op, "Exclusive", False)), bool(_opt(op, "Reverse", False))
    n = dims[axis]
    total, s = em.operand(x), 1
    while s < n:
        summed = em.like(x, shape=dims)
        em.op(O.ADD, [total, _shifted(em, total, x, dims, axis, s, reverse), em.i32(0)], [summed])
        total, s = summed, s * 2
    if exclusive:
        total = _shifted(em, total, x, dims, axis, 1, reverse) if n > 1 else em.constant(otype, np.zeros(dims, dtype))
    em.op(O.RESHAPE, [total, em.i32_vector(dims)], [em.output(op.outputs[0])])


def _one_hot(em: Emitter, op: Operator) -> None:
    """ONE_HOT with a constant depth and on/off values: EQUAL of the indices (a 1 inserted at the axis)
    with 0…depth−1, then SELECT between constant on and off tensors of the output's shape."""
    indices = op.inputs[0]
    depth = int(_const(em, op, 1, "depth").reshape(-1)[0])
    on = _const(em, op, 2, "on_value").reshape(-1)[0]
    off = _const(em, op, 3, "off_value").reshape(-1)[0]
    out = op.outputs[0]
    _plain_type(em, out, "ONE_HOT")
    idims = _known_shape(em, indices)
    axis = int(_opt(op, "Axis", -1))
    axis = axis % (len(idims) + 1)
    odims = idims[:axis] + [depth] + idims[axis:]
    column = idims[:axis] + [1] + idims[axis:]
    expanded = em.like(indices, shape=column)
    em.op(O.RESHAPE, [em.operand(indices), em.i32_vector(column)], [expanded])
    positions = np.arange(depth, dtype=np.int32).reshape([depth] + [1] * (len(idims) - axis))
    hot = _bool_like(em, odims)
    em.op(O.EQUAL, [expanded, em.constant(T.TENSOR_INT32, positions)], [hot])
    em.op(O.SELECT, [hot, _filled(em, out, odims, on), _filled(em, out, odims, off)], [em.output(out)])


def _matrix_diag(em: Emitter, op: Operator) -> None:
    """MATRIX_DIAG: the diagonal row TILEd into every row, then SELECT on a constant identity pattern
    (off-diagonal zeros whatever the values, NaN included)."""
    x = op.inputs[0]
    dims = _known_shape(em, x)
    n = dims[-1]
    row_dims, out_dims = dims[:-1] + [1, n], dims[:-1] + [n, n]
    row, tiled = em.like(x, shape=row_dims), em.like(x, shape=out_dims)
    em.op(O.RESHAPE, [em.operand(x), em.i32_vector(row_dims)], [row])
    em.op(O.TILE, [row, em.i32_vector([1] * (len(dims) - 1) + [n, 1])], [tiled])
    pattern = np.broadcast_to(np.eye(n, dtype=bool), out_dims)
    em.op(O.SELECT, [em.constant(T.TENSOR_BOOL8, pattern), tiled, _filled(em, x, out_dims, 0)],
          [em.output(op.outputs[0])])


def _segment_sum(em: Emitter, op: Operator) -> None:
    """SEGMENT_SUM / UNSORTED_SEGMENT_SUM of float32 data with constant segment ids: the data's rows
    (transposed) times a constant 0/1 membership matrix, a FULLY_CONNECTED."""
    data = op.inputs[0]
    if em.tensor(data).type_name != "FLOAT32":
        raise Unsupported(f"{op.name} of {em.tensor(data).type_name}")
    ids = _const(em, op, 1, "segment_ids").reshape(-1).astype(np.int64)
    dims = _known_shape(em, data)
    segments = int(_const(em, op, 2, "num_segments").reshape(-1)[0]) if len(op.inputs) > 2 else \
        int(ids.max(initial=-1)) + 1
    if len(ids) != dims[0] or (ids < 0).any() or (ids >= segments).any():
        raise Unsupported(f"segment ids {ids.tolist()} for {dims[0]} rows and {segments} segments")
    if op.name == "SEGMENT_SUM" and not np.isin(np.diff(ids), (0, 1)).all():
        raise Unsupported(f"SEGMENT_SUM ids {ids.tolist()} must rise by 0 or 1 from one row to the next")
    inner = int(np.prod(dims[1:]))
    membership = (ids[None, :] == np.arange(segments)[:, None]).astype(np.float32)
    rows, columns, summed = (em.like(data, shape=s) for s in ([dims[0], inner], [inner, dims[0]],
                                                              [inner, segments]))
    em.op(O.RESHAPE, [em.operand(data), em.i32_vector([dims[0], inner])], [rows])
    em.op(O.TRANSPOSE, [rows, em.i32_vector([1, 0])], [columns])
    em.op(O.FULLY_CONNECTED, [columns, em.constant(T.TENSOR_FLOAT32, membership),
                              em.constant(T.TENSOR_FLOAT32, np.zeros(segments, np.float32)), em.i32(0)], [summed])
    back = em.like(data, shape=[segments, inner])
    em.op(O.TRANSPOSE, [summed, em.i32_vector([1, 0])], [back])
    em.op(O.RESHAPE, [back, em.i32_vector([segments] + dims[1:])], [em.output(op.outputs[0])])


def _bucketize(em: Emitter, op: Operator) -> None:
    """BUCKETIZE with constant boundaries: the count of boundaries ≤ x (x with a trailing axis compared
    with every boundary, 1.0/0.0 selected, summed), cast to INT32."""
    x = op.inputs[0]
    if em.tensor(x).type_name != "FLOAT32":
        raise Unsupported(f"BUCKETIZE of {em.tensor(x).type_name}")
    bounds = np.asarray(op.options.BoundariesAsNumpy() if op.options is not None else [], np.float32)
    dims = _known_shape(em, x)
    if bounds.size == 0:
        em.folded[op.outputs[0]] = np.zeros(dims, np.int32)
        return
    if (np.diff(bounds) < 0).any():
        raise Unsupported("BUCKETIZE boundaries must be sorted")
    wide = dims + [bounds.size]
    column, reached, counts, total = em.like(x, shape=dims + [1]), _bool_like(em, wide), em.like(x, shape=wide), \
        em.like(x, shape=dims)
    em.op(O.RESHAPE, [em.operand(x), em.i32_vector(dims + [1])], [column])
    em.op(O.GREATER_EQUAL, [column, em.constant(T.TENSOR_FLOAT32, bounds)], [reached])
    em.op(O.SELECT, [reached, _filled(em, x, wide, 1), _filled(em, x, wide, 0)], [counts])
    em.op(O.REDUCE_SUM, [counts, em.i32_vector([len(dims)]), em.boolean(False)], [total])
    em.op(O.CAST, [total], [em.output(op.outputs[0])])


CONVERTERS = {
    # element-wise
    "ADD": _with_activation(O.ADD), "SUB": _with_activation(O.SUB), "MUL": _with_activation(O.MUL),
    "DIV": _with_activation(O.DIV), "MAXIMUM": _direct(O.MAXIMUM), "MINIMUM": _direct(O.MINIMUM),
    "POW": _direct(O.POW), "PRELU": _direct(O.PRELU), "SQUARE": _square, "SQUARED_DIFFERENCE": _squared_difference,
    "ADD_N": _add_n,
    "RELU": _clamp(O.RELU, 0.0, None), "RELU6": _clamp(O.RELU6, 0.0, 6.0),
    "RELU_N1_TO_1": _clamp(O.RELU1, -1.0, 1.0),
    "LOGISTIC": _direct(O.LOGISTIC), "TANH": _direct(O.TANH), "HARD_SWISH": _direct(O.HARD_SWISH), "ELU": _elu,
    "LEAKY_RELU": _leaky_relu, "FLOOR": _direct(O.FLOOR), "ABS": _direct(O.ABS), "EXP": _direct(O.EXP),
    "LOG": _direct(O.LOG), "NEG": _direct(O.NEG), "RSQRT": _direct(O.RSQRT), "SIN": _direct(O.SIN),
    "SQRT": _direct(O.SQRT),
    "EQUAL": _direct(O.EQUAL), "NOT_EQUAL": _direct(O.NOT_EQUAL), "GREATER": _direct(O.GREATER),
    "GREATER_EQUAL": _direct(O.GREATER_EQUAL), "LESS": _direct(O.LESS), "LESS_EQUAL": _direct(O.LESS_EQUAL),
    "LOGICAL_AND": _direct(O.LOGICAL_AND), "LOGICAL_OR": _direct(O.LOGICAL_OR), "LOGICAL_NOT": _direct(O.LOGICAL_NOT),
    "SELECT": _select, "SELECT_V2": _select_v2, "CAST": _cast, "CEIL": _ceil, "FLOOR_DIV": _floor_div,
    "RELU_0_TO_1": _relu_0_to_1, "GELU": _gelu,
    "DEQUANTIZE": _dequantize, "DENSIFY": _densify, "QUANTIZE": _quantize,
    # convolution, pooling, matrix products
    "CONV_2D": _conv, "DEPTHWISE_CONV_2D": _depthwise, "TRANSPOSE_CONV": _transpose_conv,
    "Convolution2DTransposeBias": _transpose_conv_bias, "TFLite_Detection_PostProcess": _detection_postprocess,
    "AVERAGE_POOL_2D": _pool(O.AVERAGE_POOL_2D), "MAX_POOL_2D": _pool(O.MAX_POOL_2D), "L2_POOL_2D": _pool(O.L2_POOL_2D),
    "FULLY_CONNECTED": _fully_connected, "BATCH_MATMUL": _batch_matmul,
    # normalisations
    "SOFTMAX": _softmax, "LOG_SOFTMAX": _log_softmax, "L2_NORMALIZATION": _l2_norm,
    "LOCAL_RESPONSE_NORMALIZATION": _lrn,
    # shapes, reductions, data movement
    "CONCATENATION": _concatenation, "RESHAPE": _reshape, "SQUEEZE": _squeeze, "EXPAND_DIMS": _expand_dims,
    "TRANSPOSE": _tensor_args(O.TRANSPOSE), "PAD": _tensor_args(O.PAD), "PADV2": _pad_v2, "MIRROR_PAD": _mirror_pad,
    "MEAN": _reduce(O.MEAN, keep_as_int=True), "SUM": _reduce(O.REDUCE_SUM), "REDUCE_MAX": _reduce(O.REDUCE_MAX),
    "REDUCE_MIN": _reduce(O.REDUCE_MIN), "REDUCE_PROD": _reduce(O.REDUCE_PROD), "REDUCE_ANY": _reduce(O.REDUCE_ANY),
    "REDUCE_ALL": _reduce(O.REDUCE_ALL),
    "RESIZE_BILINEAR": _resize(O.RESIZE_BILINEAR), "RESIZE_NEAREST_NEIGHBOR": _resize(O.RESIZE_NEAREST_NEIGHBOR),
    "STRIDED_SLICE": _strided_slice, "SLICE": _tensor_args(O.SLICE), "GATHER": _gather, "SPLIT": _split,
    "TILE": _tile, "PACK": _pack, "REVERSE_V2": _reverse, "SPLIT_V": _split_v, "UNPACK": _unpack,
    "SHAPE": _shape, "RANK": _rank, "ZEROS_LIKE": _zeros_like, "FILL": _fill, "BROADCAST_TO": _broadcast_to,
    "ARG_MAX": _arg(O.ARGMAX), "ARG_MIN": _arg(O.ARGMIN), "TOPK_V2": _topk,
    "DEPTH_TO_SPACE": _block(O.DEPTH_TO_SPACE), "SPACE_TO_DEPTH": _block(O.SPACE_TO_DEPTH),
    "BATCH_TO_SPACE_ND": _batch_to_space, "SPACE_TO_BATCH_ND": _space_to_batch,
    # lookups, hashing, recurrent networks
    "EMBEDDING_LOOKUP": _embedding_lookup, "HASHTABLE_LOOKUP": _hashtable_lookup, "LSH_PROJECTION": _lsh_projection,
    "LSTM": _lstm, "UNIDIRECTIONAL_SEQUENCE_LSTM": _sequence_lstm, "BIDIRECTIONAL_SEQUENCE_LSTM": _bidirectional_lstm,
    "RNN": _rnn, "UNIDIRECTIONAL_SEQUENCE_RNN": _sequence_rnn, "BIDIRECTIONAL_SEQUENCE_RNN": _bidirectional_rnn,
    "SVDF": _svdf,
    # control flow (multi-subgraph models)
    "IF": _if, "WHILE": _while,
    # composed of several NNAPI operations
    "COS": _cos, "SIGN": _sign, "ROUND": _round, "FLOOR_MOD": _floor_mod, "RANGE": _range,
    "BROADCAST_ARGS": _broadcast_args, "GATHER_ND": _gather_nd, "CUMSUM": _cumsum, "ONE_HOT": _one_hot,
    "MATRIX_DIAG": _matrix_diag, "SEGMENT_SUM": _segment_sum, "UNSORTED_SEGMENT_SUM": _segment_sum,
    "BUCKETIZE": _bucketize,
}

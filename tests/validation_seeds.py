"""Valid seed models (built with ModelBuilder) shared by the validation test modules."""
from __future__ import annotations

import numpy as np

from gpu_driver import ModelBuilder
from gpu_driver.hal import OperandType as T
from gpu_driver.hal import OperationType as O
from gpu_driver.hal import SymmPerChannelQuantParams

F32, Q8A, I32 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.INT32


def add_relu():
    """ADD then RELU (two operations: order/cycle mutations)."""
    b = ModelBuilder()
    a = b.add_input(F32, [2, 2])
    c = b.add_input(F32, [2, 2])
    act = b.add_scalar(I32, 0)
    t = b.add_operand(F32, [2, 2])
    b.add_operation(O.ADD, [a, c, act], [t])
    o = b.add_operand(F32, [2, 2])
    b.add_operation(O.RELU, [t], [o])
    b.set_outputs([o])
    return b.finish()


def mul_q8():
    b = ModelBuilder()
    a = b.add_input(Q8A, [1, 3], scale=0.5, zero_point=10)
    c = b.add_input(Q8A, [1, 3], scale=0.25, zero_point=0)
    act = b.add_scalar(I32, 0)
    o = b.add_operand(Q8A, [1, 3], scale=1.0, zero_point=5)
    b.add_operation(O.MUL, [a, c, act], [o])
    b.set_outputs([o])
    return b.finish()


def add_f16():
    b = ModelBuilder()
    a = b.add_input(T.TENSOR_FLOAT16, [3])
    c = b.add_constant(T.TENSOR_FLOAT16, [3], [1, 2, 3])
    act = b.add_scalar(I32, 1)
    o = b.add_operand(T.TENSOR_FLOAT16, [3])
    b.add_operation(O.ADD, [a, c, act], [o])
    b.set_outputs([o])
    return b.finish()


def conv_f32():
    """CONV_2D implicit padding; the filter (288 bytes) lives in a CONSTANT_REFERENCE pool."""
    b = ModelBuilder()
    x = b.add_input(F32, [1, 4, 4, 2])
    w = b.add_constant(F32, [4, 3, 3, 2], np.arange(72, dtype=np.float32) / 72)
    bias = b.add_constant(F32, [4], [0, 1, 2, 3])
    pad, s, act = b.add_scalar(I32, 1), b.add_scalar(I32, 1), b.add_scalar(I32, 0)
    o = b.add_operand(F32, [1, 4, 4, 4])
    b.add_operation(O.CONV_2D, [x, w, bias, pad, s, s, act], [o])
    b.set_outputs([o])
    return b.finish()


def conv_pc8():
    """CONV_2D explicit padding with a per-channel quantized filter."""
    b = ModelBuilder()
    x = b.add_input(Q8A, [1, 3, 3, 2], scale=0.5, zero_point=128)
    w = b.add_constant(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 1, 1, 2], [1, 2, 3, 4],
                       channel_quant=SymmPerChannelQuantParams([0.1, 0.2], 0))
    bias = b.add_constant(T.TENSOR_INT32, [2], [0, 10])
    zero, one = b.add_scalar(I32, 0), b.add_scalar(I32, 1)
    o = b.add_operand(Q8A, [1, 3, 3, 2], scale=1.0, zero_point=100)
    b.add_operation(O.CONV_2D, [x, w, bias, zero, zero, zero, zero, one, one, zero], [o])
    b.set_outputs([o])
    return b.finish()


def depthwise_f32():
    b = ModelBuilder()
    x = b.add_input(F32, [1, 3, 3, 2])
    w = b.add_constant(F32, [1, 2, 2, 4], np.ones(16, np.float32))
    bias = b.add_constant(F32, [4], [0, 0, 0, 0])
    valid, one, mult, act = b.add_scalar(I32, 2), b.add_scalar(I32, 1), b.add_scalar(I32, 2), b.add_scalar(I32, 0)
    o = b.add_operand(F32, [1, 2, 2, 4])
    b.add_operation(O.DEPTHWISE_CONV_2D, [x, w, bias, valid, one, one, mult, act], [o])
    b.set_outputs([o])
    return b.finish()


def avg_pool_f32():
    b = ModelBuilder()
    x = b.add_input(F32, [1, 4, 4, 1])
    zero, two = b.add_scalar(I32, 0), b.add_scalar(I32, 2)
    o = b.add_operand(F32, [1, 2, 2, 1])
    b.add_operation(O.AVERAGE_POOL_2D, [x, zero, zero, zero, zero, two, two, two, two, zero], [o])
    b.set_outputs([o])
    return b.finish()


def max_pool_q8():
    b = ModelBuilder()
    x = b.add_input(Q8A, [1, 4, 4, 1], scale=0.5, zero_point=3)
    same, two, zero = b.add_scalar(I32, 1), b.add_scalar(I32, 2), b.add_scalar(I32, 0)
    o = b.add_operand(Q8A, [1, 2, 2, 1], scale=0.5, zero_point=3)
    b.add_operation(O.MAX_POOL_2D, [x, same, two, two, two, two, zero], [o])
    b.set_outputs([o])
    return b.finish()


def fully_connected():
    b = ModelBuilder()
    x = b.add_input(F32, [2, 3])
    w = b.add_constant(F32, [4, 3], np.arange(12, dtype=np.float32))
    bias = b.add_constant(F32, [4], [1, 1, 1, 1])
    act = b.add_scalar(I32, 0)
    o = b.add_operand(F32, [2, 4])
    b.add_operation(O.FULLY_CONNECTED, [x, w, bias, act], [o])
    b.set_outputs([o])
    return b.finish()


def concatenation():
    b = ModelBuilder()
    x = b.add_input(F32, [1, 2])
    y = b.add_input(F32, [1, 3])
    axis = b.add_scalar(I32, 1)
    o = b.add_operand(F32, [1, 5])
    b.add_operation(O.CONCATENATION, [x, y, axis], [o])
    b.set_outputs([o])
    return b.finish()


def softmax_q8():
    b = ModelBuilder()
    x = b.add_input(Q8A, [1, 4], scale=0.1, zero_point=0)
    beta = b.add_scalar(T.FLOAT32, 1.0)
    o = b.add_operand(Q8A, [1, 4], scale=1 / 256, zero_point=0)
    b.add_operation(O.SOFTMAX, [x, beta], [o])
    b.set_outputs([o])
    return b.finish()


def reshape_f32():
    b = ModelBuilder()
    x = b.add_input(F32, [2, 3])
    shape = b.add_constant(T.TENSOR_INT32, [2], [3, 2])
    o = b.add_operand(F32, [3, 2])
    b.add_operation(O.RESHAPE, [x, shape], [o])
    b.set_outputs([o])
    return b.finish()


def tanh_q8():
    b = ModelBuilder()
    x = b.add_input(Q8A, [2, 2], scale=0.05, zero_point=128)
    o = b.add_operand(Q8A, [2, 2], scale=1 / 128, zero_point=128)
    b.add_operation(O.TANH, [x], [o])
    b.set_outputs([o])
    return b.finish()


def lstm_f32():
    """LSTM, 23 inputs, no CIFG, no peephole, no projection (B=1, I=2, U=2, O=2)."""
    b = ModelBuilder()
    x = b.add_input(F32, [1, 2])
    w = lambda shape: b.add_constant(F32, shape, np.full(int(np.prod(shape)), 0.1, np.float32))  # noqa: E731
    ins = [x, w([2, 2]), w([2, 2]), w([2, 2]), w([2, 2]), w([2, 2]), w([2, 2]), w([2, 2]), w([2, 2]),
           b.add_no_value(F32), b.add_no_value(F32), b.add_no_value(F32),
           w([2]), w([2]), w([2]), w([2]), b.add_no_value(F32), b.add_no_value(F32)]
    ins += [b.add_input(F32, [1, 2]), b.add_input(F32, [1, 2]), b.add_scalar(I32, 4),
            b.add_scalar(T.FLOAT32, 0.0), b.add_scalar(T.FLOAT32, 0.0)]
    outs = [b.add_operand(F32, [1, 8]), b.add_operand(F32, [1, 2]), b.add_operand(F32, [1, 2]),
            b.add_operand(F32, [1, 2])]
    b.add_operation(O.LSTM, ins, outs)
    b.set_outputs(outs)
    return b.finish()


def _branch(op_type):
    g = ModelBuilder()
    y = g.add_input(F32, [2])
    act = g.add_scalar(I32, 0)
    o = g.add_operand(F32, [2])
    g.add_operation(op_type, [y, y, act], [o])
    g.set_outputs([o])
    return g


def if_model():
    b = ModelBuilder()
    cond = b.add_input(T.TENSOR_BOOL8, [1])
    x = b.add_input(F32, [2])
    then_ = b.add_subgraph(_branch(O.ADD))
    else_ = b.add_subgraph(_branch(O.MUL))
    o = b.add_operand(F32, [2])
    b.add_operation(O.IF, [cond, then_, else_, x], [o])
    b.set_outputs([o])
    return b.finish()


def while_model():
    """while x < limit: x = x + 1 (m=1 input-output value, n=1 input-only value)."""
    cond = ModelBuilder()
    cx, climit = cond.add_input(F32, [1]), cond.add_input(F32, [1])
    c_out = cond.add_operand(T.TENSOR_BOOL8, [1])
    cond.add_operation(O.LESS, [cx, climit], [c_out])
    cond.set_outputs([c_out])
    body = ModelBuilder()
    bx, _blimit = body.add_input(F32, [1]), body.add_input(F32, [1])
    one, act = body.add_constant(F32, [1], [1.0]), body.add_scalar(I32, 0)
    b_out = body.add_operand(F32, [1])
    body.add_operation(O.ADD, [bx, one, act], [b_out])
    body.set_outputs([b_out])
    b = ModelBuilder()
    x, limit = b.add_input(F32, [1]), b.add_input(F32, [1])
    c, bd = b.add_subgraph(cond), b.add_subgraph(body)
    o = b.add_operand(F32, [1])
    b.add_operation(O.WHILE, [c, bd, x, limit], [o])
    b.set_outputs([o])
    return b.finish()


SEEDS = {f.__name__: f for f in (add_relu, mul_q8, add_f16, conv_f32, conv_pc8, depthwise_f32, avg_pool_f32,
                                 max_pool_q8, fully_connected, concatenation, softmax_q8, reshape_f32, tanh_q8,
                                 lstm_f32, if_model, while_model)}

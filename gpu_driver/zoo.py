"""A small model zoo built with gpu_driver.ModelBuilder: MobileNet v1 and v2 (float32, seeded random
weights), a single convolution layer, and the tiny models of the overhead benchmark.  Used by
`gpu-driver bench`, benchmarks/ and tests, and by library users who want a real workload.

``width`` (channel multiplier) and ``resolution`` are parameters so tests can build small variants;
the benchmarks use 1.0 / 224.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .builder import ModelBuilder
from .hal.types import OperandType as T, OperationType as O

SAME, VALID = 1, 2
NONE, RELU6 = 0, 3


@dataclass
class BenchModel:
    name: str
    model: object
    input_shape: tuple
    flops: int = 0                    # multiply-adds × 2 of the whole model
    conv_flops: int = 0               # of CONV_2D layers only
    layers: list = field(default_factory=list)   # (op name, flops) per layer

    def random_input(self, seed: int = 0) -> np.ndarray:
        return np.random.default_rng(seed).uniform(-1, 1, self.input_shape).astype(np.float32)


class _Net:
    def __init__(self, seed: int):
        self.b = ModelBuilder()
        self.rng = np.random.default_rng(seed)
        self.flops = 0
        self.conv_flops = 0
        self.layers: list = []
        self._scalars: dict = {}

    def i32(self, v: int) -> int:
        key = ("i", v)
        if key not in self._scalars:
            self._scalars[key] = self.b.add_scalar(T.INT32, v)
        return self._scalars[key]

    def f32(self, v: float) -> int:
        return self.b.add_scalar(T.FLOAT32, v)

    def weights(self, shape, fan_in: int):
        w = self.rng.standard_normal(shape).astype(np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        return self.b.add_constant(T.TENSOR_FLOAT32, shape, w)

    def bias(self, n: int):
        return self.b.add_constant(T.TENSOR_FLOAT32, [n], self.rng.uniform(-0.05, 0.05, n).astype(np.float32))

    def conv(self, x, shape, cout: int, k: int, stride: int, act: int):
        n, h, w, cin = shape
        ho, wo = -(-h // stride), -(-w // stride)
        f = self.weights([cout, k, k, cin], k * k * cin)
        out_shape = (n, ho, wo, cout)
        y = self.b.add_operand(T.TENSOR_FLOAT32, out_shape)
        self.b.add_operation(O.CONV_2D, [x, f, self.bias(cout), self.i32(SAME), self.i32(stride), self.i32(stride),
                                         self.i32(act)], [y])
        fl = 2 * n * ho * wo * cout * k * k * cin
        self.flops += fl
        self.conv_flops += fl
        self.layers.append(("CONV_2D", fl))
        return y, out_shape

    def dwconv(self, x, shape, stride: int, act: int):
        n, h, w, c = shape
        ho, wo = -(-h // stride), -(-w // stride)
        f = self.weights([1, 3, 3, c], 9)
        out_shape = (n, ho, wo, c)
        y = self.b.add_operand(T.TENSOR_FLOAT32, out_shape)
        self.b.add_operation(O.DEPTHWISE_CONV_2D, [x, f, self.bias(c), self.i32(SAME), self.i32(stride),
                                                   self.i32(stride), self.i32(1), self.i32(act)], [y])
        fl = 2 * n * ho * wo * c * 9
        self.flops += fl
        self.layers.append(("DEPTHWISE_CONV_2D", fl))
        return y, out_shape

    def add(self, a, b, shape):
        y = self.b.add_operand(T.TENSOR_FLOAT32, shape)
        self.b.add_operation(O.ADD, [a, b, self.i32(NONE)], [y])
        self.flops += int(np.prod(shape))
        self.layers.append(("ADD", int(np.prod(shape))))
        return y

    def head(self, x, shape, classes: int):
        n, h, w, c = shape
        p = self.b.add_operand(T.TENSOR_FLOAT32, (n, 1, 1, c))
        self.b.add_operation(O.AVERAGE_POOL_2D, [x, self.i32(VALID), self.i32(1), self.i32(1), self.i32(w),
                                                 self.i32(h), self.i32(NONE)], [p])
        self.flops += n * h * w * c
        shp = self.b.add_constant(T.TENSOR_INT32, [2], np.array([n, c], np.int32))
        r = self.b.add_operand(T.TENSOR_FLOAT32, (n, c))
        self.b.add_operation(O.RESHAPE, [p, shp], [r])
        wts = self.weights([classes, c], c)
        logits = self.b.add_operand(T.TENSOR_FLOAT32, (n, classes))
        self.b.add_operation(O.FULLY_CONNECTED, [r, wts, self.bias(classes), self.i32(NONE)], [logits])
        fl = 2 * n * c * classes
        self.flops += fl
        self.layers.append(("FULLY_CONNECTED", fl))
        prob = self.b.add_operand(T.TENSOR_FLOAT32, (n, classes))
        self.b.add_operation(O.SOFTMAX, [logits, self.f32(1.0)], [prob])
        self.b.set_outputs([prob])


def _ch(c: int, width: float) -> int:
    return max(8, int(c * width + 4) // 8 * 8) if width != 1.0 else c


def mobilenet_v1(width: float = 1.0, resolution: int = 224, classes: int = 1001, seed: int = 0,
                 batch: int = 1) -> BenchModel:
    net = _Net(seed)
    shape = (batch, resolution, resolution, 3)
    x = net.b.add_input(T.TENSOR_FLOAT32, shape)
    x, shape = net.conv(x, shape, _ch(32, width), 3, 2, RELU6)
    for c, s in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1),
                 (512, 1), (512, 1), (1024, 2), (1024, 1)]:
        x, shape = net.dwconv(x, shape, s, RELU6)
        x, shape = net.conv(x, shape, _ch(c, width), 1, 1, RELU6)
    net.head(x, shape, classes)
    return BenchModel(f"mobilenet_v1_{width}_{resolution}", net.b.finish(), (batch, resolution, resolution, 3),
                      net.flops, net.conv_flops, net.layers)


def mobilenet_v2(width: float = 1.0, resolution: int = 224, classes: int = 1001, seed: int = 0,
                 batch: int = 1) -> BenchModel:
    net = _Net(seed)
    shape = (batch, resolution, resolution, 3)
    x = net.b.add_input(T.TENSOR_FLOAT32, shape)
    x, shape = net.conv(x, shape, _ch(32, width), 3, 2, RELU6)
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            cin = shape[3]
            inp, in_shape = x, shape
            if t != 1:
                x, shape = net.conv(x, shape, cin * t, 1, 1, RELU6)
            x, shape = net.dwconv(x, shape, stride, RELU6)
            x, shape = net.conv(x, shape, _ch(c, width), 1, 1, NONE)
            if stride == 1 and in_shape == shape:
                x = net.add(inp, x, shape)
    x, shape = net.conv(x, shape, 1280 if width <= 1.0 else _ch(1280, width), 1, 1, RELU6)
    net.head(x, shape, classes)
    return BenchModel(f"mobilenet_v2_{width}_{resolution}", net.b.finish(), (batch, resolution, resolution, 3),
                      net.flops, net.conv_flops, net.layers)


def chain_model(layers: int, shape=(1, 32, 32, 8), relu: bool = False, seed: int = 0,
                value_range: tuple[float, float] = (-1.0, 1.0)):
    """A float32 chain x → [op_i(x, const_i)] × layers: ADD then RELU per layer when ``relu``, else
    ADD and MUL alternating.  Constants are uniform in ``value_range`` (seeded); constants of more than
    128 bytes live in a pool.  Returns the Model (tests, the cache benchmark, the planner checks)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, shape)
    none = b.add_scalar(T.INT32, 0)
    for i in range(layers):
        c = b.add_constant(T.TENSOR_FLOAT32, shape, rng.uniform(*value_range, shape).astype(np.float32))
        y = b.add_operand(T.TENSOR_FLOAT32, shape)
        b.add_operation(O.ADD if (relu or i % 2 == 0) else O.MUL, [x, c, none], [y])
        x = y
        if relu:
            r = b.add_operand(T.TENSOR_FLOAT32, shape)
            b.add_operation(O.RELU, [x], [r])
            x = r
    b.set_outputs([x])
    return b.finish()


def add_model(shape=(1, 16)) -> BenchModel:
    """One ADD of two inputs (per-execution overhead)."""
    b = ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, shape)
    y = b.add_input(T.TENSOR_FLOAT32, shape)
    o = b.add_operand(T.TENSOR_FLOAT32, shape)
    b.add_operation(O.ADD, [x, y, b.add_scalar(T.INT32, 0)], [o])
    b.set_outputs([o])
    return BenchModel("add", b.finish(), tuple(shape), int(np.prod(shape)))


def conv_layer(h: int = 56, cin: int = 128, cout: int = 128, k: int = 1, seed: int = 0) -> BenchModel:
    """One CONV_2D (+RELU6) layer as in MobileNet, for GFLOP/s measurements."""
    net = _Net(seed)
    shape = (1, h, h, cin)
    x = net.b.add_input(T.TENSOR_FLOAT32, shape)
    y, _ = net.conv(x, shape, cout, k, 1, RELU6)
    net.b.set_outputs([y])
    return BenchModel(f"conv{k}x{k}_{h}x{h}x{cin}->{cout}", net.b.finish(), shape, net.flops, net.conv_flops,
                      net.layers)


MODELS = {"mobilenet_v1": mobilenet_v1, "mobilenet_v2": mobilenet_v2}

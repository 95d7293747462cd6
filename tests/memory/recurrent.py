"""A recurrent cell from HAL 1.0 operations, h' = tanh(FC(x; Wx, b) + FC(h; Wh, 0)), and a runner that
keeps its state in memory-domain buffers (shared by tests/memory and benchmarks/test_resident_state.py).

The state output of execution N is the state input of execution N+1 through a driver buffer.  A
request may not use one buffer as both input and output (interface.md §6.1), so the state
alternates between two buffers, each allocated with the input role and the output role: execution N
reads buffer N % 2 and writes buffer (N + 1) % 2.
"""
from __future__ import annotations

import numpy as np

import gpu_driver as gd
from gpu_driver.hal.model import BufferDesc, BufferRole, DataLocation, Request, RequestArgument
from gpu_driver.hal.types import OperandType, OperationType

F32 = OperandType.TENSOR_FLOAT32


def recurrent_model(batch: int = 1, inputs: int = 16, units: int = 32, seed: int = 0) -> gd.Model:
    """Inputs (x [batch, inputs], h [batch, units]); output h' [batch, units]."""
    rng = np.random.default_rng(seed)
    b = gd.ModelBuilder()
    x = b.add_input(F32, [batch, inputs])
    h = b.add_input(F32, [batch, units])
    wx = b.add_constant(F32, [units, inputs], rng.standard_normal((units, inputs)).astype(np.float32) * 0.3)
    wh = b.add_constant(F32, [units, units], rng.standard_normal((units, units)).astype(np.float32) * 0.3)
    bias = b.add_constant(F32, [units], rng.standard_normal(units).astype(np.float32) * 0.1)
    zero = b.add_constant(F32, [units], np.zeros(units, np.float32))
    none = b.add_scalar(OperandType.INT32, 0)
    fx = b.add_operand(F32, [batch, units])
    fh = b.add_operand(F32, [batch, units])
    s = b.add_operand(F32, [batch, units])
    out = b.add_operand(F32, [batch, units])
    b.add_operation(OperationType.FULLY_CONNECTED, [x, wx, bias, none], [fx])
    b.add_operation(OperationType.FULLY_CONNECTED, [h, wh, zero, none], [fh])
    b.add_operation(OperationType.ADD, [fx, fh, none], [s])
    b.add_operation(OperationType.TANH, [s], [out])
    b.set_outputs([out])
    return b.finish()


class ResidentRecurrence:
    """Runs the cell step by step with the state in two driver buffers of ``device`` (see module doc).

    ``x_pool`` holds the step input at offset 0 (any pool kind); :meth:`step` runs one execution.
    """

    def __init__(self, device, prepared, h0: np.ndarray, x_pool: gd.Memory):
        self.device = device
        self.prepared = prepared
        shape = list(h0.shape)
        self.buffers = [device.allocate(BufferDesc(shape), [prepared], [BufferRole(0, 1)], [BufferRole(0, 0)])[0]
                        for _ in range(2)]
        self.tokens = [b.token for b in self.buffers]
        self.buffers[0].copy_from(gd.SharedMemory.from_bytes(np.ascontiguousarray(h0, np.float32)), shape)
        self.x_pool = x_pool
        self.x_bytes = int(np.prod(prepared.model.main.operands[prepared.model.main.input_indexes[0]].dimensions)) * 4
        self.n = 0

    @property
    def current(self):
        return self.buffers[self.n % 2]

    def step(self):
        src, dst = self.tokens[self.n % 2], self.tokens[(self.n + 1) % 2]
        req = Request([RequestArgument(DataLocation(0, 0, self.x_bytes)), RequestArgument(DataLocation(1, 0, 0))],
                      [RequestArgument(DataLocation(2, 0, 0))], [self.x_pool, src, dst])
        shapes, _ = self.prepared.execute_synchronously(req)
        self.n += 1
        return shapes

    def state(self) -> np.ndarray:
        """The current state, copied out through shared memory (a counted device→host copy)."""
        buf = self.current
        mem = gd.SharedMemory(buf.nbytes)
        buf.copy_to(mem)
        return mem.array(np.float32).reshape(buf.dimensions).copy()

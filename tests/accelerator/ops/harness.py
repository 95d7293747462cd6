"""Running a model on an accelerator device and checking it against the reference device.

Every execution goes through the driver: ``device.prepare_model(model)`` then ``prepared.execute``;
the reference device (numpy) is the oracle.  The device comes from the ``accelerator`` fixture
(tests/conftest.py), one test per accelerator device present.
"""
from __future__ import annotations

import numpy as np

import gpu_driver

from .models import random_data, single_op

F32_ATOL = 1e-5
F32_RTOL = 5 * 2.0 ** -23


def run_model(device, model, inputs):
    """The outputs of ``model`` prepared and executed on ``device``."""
    prepared = device.prepare_model(model)
    return [np.asarray(o) for o in prepared.execute(inputs)]


def run_reference(model, inputs):
    return run_model(gpu_driver.get_device("reference"), model, inputs)


def assert_close(actual, expected, quant_tol: int = 0, atol=F32_ATOL, rtol=F32_RTOL, what=""):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol, err_msg=what)
    else:
        diff = np.abs(actual.astype(np.int64) - expected.astype(np.int64))
        assert diff.max(initial=0) <= quant_tol, f"{what}: max diff {diff.max()} > {quant_tol}"


def compare(device, model, inputs, quant_tol: int = 0, atol=F32_ATOL, rtol=F32_RTOL, what=""):
    """Run ``model`` on ``device`` and on the reference; assert every output matches.  Returns both."""
    exp = run_reference(model, inputs)
    act = run_model(device, model, inputs)
    assert len(act) == len(exp)
    for i, (a, e) in enumerate(zip(act, exp)):
        assert_close(a, e, quant_tol, atol, rtol, what=f"{device.name} {what} output {i}")
    return act, exp


def check_op(device, op, args, outs, rng=None, quant_tol=0, atol=F32_ATOL, rtol=F32_RTOL, data=None, what=""):
    """Build a one-op model, check ``device`` supports it, run it there and on the reference, compare."""
    rng = rng or np.random.default_rng(1)
    model, ins = single_op(op, args, outs)
    assert all(device.get_supported_operations(model)), f"{op.name} {what}: not supported by {device.name}"
    inputs = data if data is not None else [random_data(s, rng) for s in ins]
    return compare(device, model, inputs, quant_tol, atol, rtol, what=f"{op.name} {what}")

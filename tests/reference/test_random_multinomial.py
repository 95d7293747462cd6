"""RANDOM_MULTINOMIAL: samples follow softmax(logits) (checked statistically, with fixed seeds), never
pick a class of non-finite logit, repeat for the same seeds; an accelerator draws the same stream."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver
from gpu_driver import ModelBuilder, OperandType as T, OperationType as O


def _model(logits_shape, samples: int, seeds, ttype=T.TENSOR_FLOAT32):
    b = ModelBuilder()
    x = b.add_input(ttype, list(logits_shape))
    n = b.add_scalar(T.INT32, samples)
    s = b.add_constant(T.TENSOR_INT32, [2], np.asarray(seeds, np.int32))
    out = b.add_operand(T.TENSOR_INT32, [logits_shape[0], samples])
    b.add_operation(O.RANDOM_MULTINOMIAL, [x, n, s], [out]).set_outputs([out])
    return b.finish()


def _draw(device_name, logits, samples, seeds, ttype=T.TENSOR_FLOAT32):
    model = _model(logits.shape, samples, seeds, ttype)
    device = gpu_driver.get_device(device_name)
    assert all(device.get_supported_operations(model))
    return device.prepare_model(model).execute([logits])[0]


@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices()])
def test_samples_follow_the_softmax(device_name):
    # softmax([0, ln 3]) = (1/4, 3/4); 4000 samples: the binomial standard deviation of the fraction is
    # 0.0068, so ±0.03 is a 4σ band
    logits = np.array([[0.0, np.log(3.0)], [np.log(3.0), 0.0]], np.float32)
    out = _draw(device_name, logits, 4000, (7, 11))
    assert out.shape == (2, 4000) and set(np.unique(out)) <= {0, 1}
    assert abs(out[0].mean() - 0.75) < 0.03
    assert abs(out[1].mean() - 0.25) < 0.03


@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices()])
def test_non_finite_logits_are_never_drawn(device_name):
    logits = np.array([[-np.inf, 0.0, np.nan, 0.0, np.inf]], np.float32)
    out = _draw(device_name, logits, 500, (1, 2))
    assert set(np.unique(out)) == {1, 3}


def test_same_seeds_same_samples_other_seeds_other_samples():
    logits = np.zeros((1, 10), np.float32)
    a = _draw("reference", logits, 200, (5, 6))
    np.testing.assert_array_equal(a, _draw("reference", logits, 200, (5, 6)))
    assert (a != _draw("reference", logits, 200, (5, 7))).any()


@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices() if d.name != "reference"])
@pytest.mark.parametrize("ttype", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16])
def test_accelerator_draws_the_reference_stream(device_name, ttype):
    """Same counter-based generator: identical samples except where exp's last bit moves a boundary."""
    logits = np.random.default_rng(3).normal(0, 2, (3, 50)).astype(np.float32)
    feed = logits.astype(np.float16) if ttype == T.TENSOR_FLOAT16 else logits
    ours = _draw(device_name, feed, 300, (123, 456), ttype)
    ref = _draw("reference", feed, 300, (123, 456), ttype)
    assert (ours == ref).mean() > 0.99

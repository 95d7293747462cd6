"""Request validation (interface.md §9.2): hand-written bad requests and hypothesis fuzzing."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpu_driver as gd
from gpu_driver import ModelBuilder
from gpu_driver.errors import DriverError
from gpu_driver.hal import (DataLocation, ErrorStatus, OperandType, OperationType, Request, RequestArgument)
from gpu_driver.validation import validate_request

from gpu_driver.memory import SharedMemory
from gpu_driver.runtime.prepared_model import PreparedModel

from . import validation_seeds as seeds

T, O = OperandType, OperationType
F32 = T.TENSOR_FLOAT32


def relu_model(in_dims=(2, 3), out_dims=(2, 3)):
    b = ModelBuilder()
    x = b.add_input(F32, list(in_dims))
    o = b.add_operand(F32, list(out_dims))
    b.add_operation(O.RELU, [x], [o])
    b.set_outputs([o])
    return b.finish()


def arg(pool=0, offset=0, length=24, dims=(), no_value=False):
    return RequestArgument(DataLocation(pool, offset, length), list(dims) if dims is not None else None, no_value)


def rejects(request, model, fragment, **kw):
    with pytest.raises(DriverError) as info:
        validate_request(request, model, **kw)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
    assert fragment.lower() in info.value.message.lower(), info.value.message


POOL = SharedMemory(256)


def test_valid_request_shapes():
    m = relu_model(in_dims=(0, 3), out_dims=(0, 0))
    shapes = validate_request(Request([arg(dims=(2, 3))], [arg(offset=64, length=100)], [POOL]), m)
    assert shapes.inputs == [(2, 3)] and shapes.outputs == [(0, 0)]
    m = relu_model()
    shapes = validate_request(Request([arg()], [arg(offset=64)], [POOL]), m)
    assert shapes.inputs == [(2, 3)] and shapes.outputs == [(2, 3)]


@pytest.mark.parametrize("request_,fragment", [
    (Request([], [arg(offset=64)], [POOL]), "request has 0 inputs, the model has 1"),
    (Request([arg()], [], [POOL]), "request has 0 outputs"),
    (Request([arg(pool=1)], [arg(offset=64)], [POOL]), "pool_index 1 out of range"),
    (Request([arg(offset=250)], [arg(offset=64)], [POOL]), "exceeds pool 0 of 256 bytes"),
    (Request([arg(length=0)], [arg(offset=64)], [POOL]), "length must be > 0"),
    (Request([arg(length=20)], [arg(offset=64)], [POOL]), "length 20 != byte size 24"),
    (Request([arg()], [arg(offset=64, length=28)], [POOL]), "length 28 != byte size 24"),
    (Request([arg(dims=(2, 3, 1))], [arg(offset=64)], [POOL]), "rank 3 differs from the model's rank 2"),
    (Request([arg(dims=(3, 2))], [arg(offset=64)], [POOL]), "dimension 0 is 3 but the model specifies 2"),
    (Request([arg(length=0, no_value=True)], [arg(offset=64)], [POOL]), "cannot be omitted"),
    (Request([arg(pool=0, length=24, no_value=True)], [arg(offset=64)], [POOL]), "all-zero location"),
    (Request([arg()], [arg(offset=12)], [POOL]), "overlaps request input 0"),
    (Request([arg()], [arg(offset=64, no_value=True)], [POOL]), "an output cannot be NO_VALUE"),
    (Request([arg()], [arg(offset=64)], [b"raw"]), "must be a Memory or a token"),
    (Request([arg()], [arg(offset=64)], [0]), "token must be > 0"),
    (Request([arg(offset=-8)], [arg(offset=64)], [POOL]), "out of range"),
    (Request([None], [arg(offset=64)], [POOL]), "must be a RequestArgument"),
    (Request([arg(dims=None)], [arg(offset=64)], [POOL]), "must be a list"),
    (Request(None, [arg(offset=64)], [POOL]), "must be a list"),
])
def test_bad_requests(request_, fragment):
    rejects(request_, relu_model(), fragment)


def test_inputs_must_be_fully_specified():
    m = relu_model(in_dims=(0, 3), out_dims=(0, 3))
    rejects(Request([arg()], [arg(offset=64)], [POOL]), m, "is not fully specified")
    rejects(Request([arg(dims=(0, 3))], [arg(offset=64)], [POOL]), m, "is not fully specified")


def test_zero_where_the_model_fixes_the_dimension():
    """Regression: request dims [0, 3] for a model operand [2, 3] were accepted (the 0 fell back to the
    model's 2).  AOSP validateRequestArguments: a request dimension may differ from the model's only
    where the model's is 0, and only outputs may give 0."""
    m = relu_model()
    for dims in [(0, 3), (2, 0), (0, 0)]:
        rejects(Request([arg(dims=dims)], [arg(offset=64)], [POOL]), m, "is 0 (unspecified) but the model specifies")
        rejects(Request([arg()], [arg(offset=64, dims=dims)], [POOL]), m, "is 0 (unspecified) but the model specifies")
    # a 0 where the model's dimension is unknown: an error for an input, fine for an output
    m = relu_model(in_dims=(0, 3), out_dims=(0, 3))
    rejects(Request([arg(dims=(0, 3))], [arg(offset=64)], [POOL]), m, "is not fully specified")
    shapes = validate_request(Request([arg(dims=(2, 3))], [arg(offset=64, dims=(0, 3))], [POOL]), m)
    assert shapes.outputs == [(0, 3)]
    rejects(Request([arg(dims=(2, 3))], [arg(offset=64, dims=(0, 3))], [POOL]), m, "must be fully specified",
            allow_unspecified_outputs=False)


@pytest.mark.parametrize("device_name", ["reference"] + [d.name for d in gd.get_devices()
                                                         if d.name.startswith("opencl")][:1])
def test_zero_sized_numpy_input(device_name):
    """The numpy convenience API reports a zero-sized input as such (INVALID_ARGUMENT), on every device."""
    prepared = gd.get_device(device_name).prepare_model(relu_model())
    for shape in [(0, 3), (2, 0)]:
        with pytest.raises(DriverError) as info:
            prepared.execute([np.zeros(shape, np.float32)])
        assert info.value.status == ErrorStatus.INVALID_ARGUMENT
        assert "is 0 (unspecified) but the model specifies" in info.value.message, info.value.message
    prepared = gd.get_device(device_name).prepare_model(relu_model(in_dims=(0, 3), out_dims=(0, 3)))
    with pytest.raises(DriverError) as info:
        prepared.execute([np.zeros((0, 3), np.float32)])
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
    assert "not fully specified" in info.value.message, info.value.message
    assert prepared.execute([np.ones((2, 3), np.float32)])[0].shape == (2, 3)


def test_fenced_outputs_must_be_fully_specified():
    m = relu_model(in_dims=(2, 3), out_dims=(0, 3))
    req = Request([arg()], [arg(offset=64)], [POOL])
    validate_request(req, m)
    rejects(req, m, "must be fully specified", allow_unspecified_outputs=False)
    validate_request(Request([arg()], [arg(offset=64, dims=(2, 3))], [POOL]), m, allow_unspecified_outputs=False)


def test_scalar_input_takes_no_dims():
    m = seeds.add_relu()  # inputs are tensors; use a model with a scalar input
    b = ModelBuilder()
    x = b.add_input(F32, [2])
    act = b.add_input(T.INT32)
    o = b.add_operand(F32, [2])
    b.add_operation(O.ADD, [x, x, act], [o])
    b.set_outputs([o])
    m = b.finish()
    rejects(Request([arg(length=8), arg(offset=8, length=4, dims=(1,))], [arg(offset=64, length=8)], [POOL]), m,
            "takes no dimensions")
    validate_request(Request([arg(length=8), arg(offset=8, length=4)], [arg(offset=64, length=8)], [POOL]), m)


def test_tokens():
    m = relu_model()
    seen = []

    def resolve(token):
        seen.append(token)
        if token != 7:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"unknown token {token}")
        return object()

    shapes = validate_request(Request([arg()], [arg(pool=1, length=0)], [POOL, 7]), m, resolve_token=resolve)
    assert shapes.outputs == [(2, 3)] and seen == [7]
    rejects(Request([arg()], [arg(pool=1, length=0)], [POOL, 8]), m, "unknown token 8", resolve_token=resolve)
    rejects(Request([arg(pool=1, length=0)], [arg(pool=1, length=0)], [POOL, 7]), m, "overlaps",
            resolve_token=resolve)
    rejects(Request([arg()], [arg(pool=1, length=0)], [POOL, 7]), m, "not accepted")


def test_output_must_not_overlap_model_constants():
    m = seeds.conv_f32()
    pool = m.pools[0]
    req = Request([RequestArgument(DataLocation(0, 0, 128))], [RequestArgument(DataLocation(1, 0, 256))],
                  [SharedMemory(128), pool])
    rejects(req, m, "overlaps constant operand")


# ---- fuzzing against prepared models ------------------------------------------------------------------

class _NumpyPrepared(PreparedModel):
    """A minimal prepared model computing RELU in numpy (exercises the shared request machinery)."""

    def _compute(self, inputs, ctx):
        return [np.maximum(inputs[0], 0).astype(np.float32)], None


def _prepared_models():
    out = []
    dev = gd.get_device("reference")
    for model in (relu_model(), relu_model(in_dims=(0, 3), out_dims=(0, 0))):
        out.append(_NumpyPrepared(dev, model))
    for build in (seeds.fully_connected, seeds.concatenation):
        try:
            out.append(dev.prepare_model(build()))
        except DriverError:  # the reference kernel is not there yet
            pass
    return out


PREPARED = _prepared_models()
_garbage = st.one_of(st.none(), st.text(max_size=3), st.floats(allow_nan=True), st.just(-1), st.just(True))
_small = st.one_of(st.integers(0, 300), st.integers(-5, 2**33), _garbage)
_dims = st.one_of(st.just([]), st.lists(st.integers(0, 5), max_size=4), st.lists(st.integers(-3, 2**33), max_size=3),
                  _garbage)


@st.composite
def _argument(draw):
    if draw(st.integers(0, 20)) == 0:
        return draw(st.one_of(st.none(), st.just("arg")))
    loc = DataLocation(draw(_small), draw(_small), draw(_small), draw(st.one_of(st.just(0), _small)))
    return RequestArgument(loc, draw(_dims), draw(st.one_of(st.booleans(), st.booleans(), _garbage)))


@st.composite
def _request(draw):
    prepared = draw(st.sampled_from(PREPARED))
    main = prepared.model.main
    n_in = len(main.input_indexes) + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
    n_out = len(main.output_indexes) + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
    pools = draw(st.lists(st.one_of(st.integers(1, 512).map(SharedMemory), st.integers(-2, 9), _garbage),
                          min_size=0, max_size=3))
    ins = [draw(_argument()) for _ in range(max(n_in, 0))]
    outs = [draw(_argument()) for _ in range(max(n_out, 0))]
    return prepared, Request(ins, outs, pools)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_request())
def test_fuzz_requests(case):
    prepared, request = case
    try:
        prepared.execute_synchronously(request)
    except DriverError as err:
        assert err.status in (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE), err


@st.composite
def _plausible_request(draw):
    """Mostly-valid requests (one pool, near-correct lengths) so that many reach execution."""
    prepared = draw(st.sampled_from(PREPARED))
    main = prepared.model.main
    pool = SharedMemory(4096)
    args = []
    offset = 0
    for idx in [*main.input_indexes, *main.output_indexes]:
        dims = [d or draw(st.integers(1, 4)) for d in main.operands[idx].dimensions]
        if draw(st.booleans()):
            dims = [max(0, d + draw(st.integers(-1, 1))) for d in dims]
        length = 4 * int(np.prod(dims)) + draw(st.sampled_from([0, 0, 0, -4, 4]))
        args.append(arg(0, offset, max(length, 0), dims if draw(st.booleans()) else ()))
        offset += 512
    n = len(main.input_indexes)
    return prepared, Request(args[:n], args[n:], [pool])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_plausible_request())
def test_fuzz_plausible_requests(case):
    prepared, request = case
    try:
        shapes, _timing = prepared.execute_synchronously(request)
        assert len(shapes) == len(request.outputs)
    except DriverError as err:
        assert err.status in (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE), err

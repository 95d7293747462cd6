"""Request-mutation fuzzing (interface.md §9.2): seeded random mutations of valid requests.

A few small valid models with valid requests are mutated thousands of times (dimensions, locations,
has_no_value, pools, argument counts) and executed on the reference device and an OpenCL device.
Every execution must either succeed or raise gpu_driver.DriverError -- never another exception,
never a crash -- and a mutation that breaks a rule of §9.2 for certain (e.g. request dimensions
``[0, 4]`` for a model input of ``[2, 4]``) must fail with INVALID_ARGUMENT.  Afterwards the
prepared model still runs the original request correctly.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ModelBuilder
from gpu_driver.errors import DriverError
from gpu_driver.hal import (DataLocation, ErrorStatus, OperandType, OperationType, Request, RequestArgument)
from gpu_driver.memory import SharedMemory

T, O = OperandType, OperationType
F32 = T.TENSOR_FLOAT32
UINT32_MAX = 2**32 - 1
HUGE = [2**31, UINT32_MAX, 2**32, 2**63, 2**64 + 7]


# ---- base cases: a valid model, a valid request and the expected outputs -----------------------------

@dataclass
class Case:
    name: str
    model: object
    in_model_dims: list  # model operand dims per request input
    out_model_dims: list
    omittable: set  # request input positions that may be NO_VALUE
    make_request: object  # () -> Request (fresh argument objects, shared pools)
    check: object  # (request, output shapes) -> None, asserts the outputs of the unmutated request


def _arg(pool, offset, length, dims):
    return RequestArgument(DataLocation(pool, offset, length), list(dims))


def _add_model(x_dims, add_y, out_dims):
    """ADD(x, y): x a model input of ``x_dims``, y what ``add_y(builder)`` adds."""
    b = ModelBuilder()
    x = b.add_input(F32, x_dims)
    y = add_y(b)
    act = b.add_scalar(T.INT32, 0)
    out = b.add_operand(F32, out_dims)
    b.add_operation(O.ADD, [x, y, act], [out]).set_outputs([out])
    return b.finish()


def _add_case() -> Case:
    model = _add_model([2, 4], lambda b: b.add_input(F32, [2, 4]), [2, 4])
    pin, pout = SharedMemory(256), SharedMemory(128)
    xv = np.arange(8, dtype=np.float32).reshape(2, 4)
    yv = np.full((2, 4), 0.5, np.float32)

    def make():  # (re)writes the inputs: a mutated request may have run with pools shifted
        pin.array(np.float32, 0, 8)[:] = xv.ravel()
        pin.array(np.float32, 64, 8)[:] = yv.ravel()
        return Request([_arg(0, 0, 32, [2, 4]), _arg(0, 64, 32, [])], [_arg(1, 0, 32, [2, 4])], [pin, pout])

    def check(req, shapes):
        assert list(shapes[0].dimensions) == [2, 4]
        np.testing.assert_array_equal(pout.array(np.float32, 0, 8).reshape(2, 4), xv + yv)

    return Case("add", model, [[2, 4], [2, 4]], [[2, 4]], set(), make, check)


def _dynamic_case() -> Case:
    """An input of unknown batch and an output of unknown shape."""
    model = _add_model([0, 4], lambda b: b.add_constant(F32, [4], np.array([1, 2, 3, 4], np.float32)), [0, 0])
    pin, pout = SharedMemory(128), SharedMemory(256)
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)

    def make():
        pin.array(np.float32, 0, 12)[:] = xv.ravel()
        return Request([_arg(0, 0, 48, [3, 4])], [_arg(1, 0, 64, [])], [pin, pout])

    def check(req, shapes):
        assert list(shapes[0].dimensions) == [3, 4]
        np.testing.assert_array_equal(pout.array(np.float32, 0, 12).reshape(3, 4), xv + [1, 2, 3, 4])

    return Case("dynamic", model, [[0, 4]], [[0, 0]], set(), make, check)


def _optional_case(omitted: bool) -> Case:
    """TRANSPOSE whose permutation is an optional model input (omitted: reverse the axes)."""
    b = ModelBuilder()
    x = b.add_input(F32, [2, 3])
    perm = b.add_input(T.TENSOR_INT32, [2])
    out = b.add_operand(F32, [3, 2])
    b.add_operation(O.TRANSPOSE, [x, perm], [out]).set_outputs([out])
    model = b.finish()
    pin, pout = SharedMemory(128), SharedMemory(64)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)

    def make():
        pin.array(np.float32, 0, 6)[:] = xv.ravel()
        pin.array(np.int32, 64, 2)[:] = [1, 0]
        perm_arg = RequestArgument(has_no_value=True) if omitted else _arg(0, 64, 8, [2])
        return Request([_arg(0, 0, 24, [2, 3]), perm_arg], [_arg(1, 0, 24, [])], [pin, pout])

    def check(req, shapes):
        assert list(shapes[0].dimensions) == [3, 2]
        np.testing.assert_array_equal(pout.array(np.float32, 0, 6).reshape(3, 2), xv.T)

    name = "optional-omitted" if omitted else "optional-given"
    return Case(name, model, [[2, 3], [2]], [[3, 2]], {1}, make, check)


CASES = [_add_case, _dynamic_case, lambda: _optional_case(False), lambda: _optional_case(True)]
CASE_IDS = ["add", "dynamic", "optional-given", "optional-omitted"]


def _devices():
    names = ["reference"] + [d.name for d in gd.get_devices() if d.name.startswith("opencl")][:1]
    if len(names) == 1:
        names.append(pytest.param("opencl", marks=pytest.mark.skip(reason="no OpenCL device")))
    return names


# ---- mutations: each edits a fresh request in place and returns (description, certainly_invalid) ------
# A mutation returns None when it does not apply to the drawn request (the caller draws again).

def _args(req):
    return [(False, i, a) for i, a in enumerate(req.inputs)] + [(True, i, a) for i, a in enumerate(req.outputs)]


def _pick(rng, req, *, present=True):
    """A random argument (only ones with a value when ``present``): (is_output, position, argument)."""
    choices = [c for c in _args(req) if not present or not c[2].has_no_value]
    return choices[rng.integers(len(choices))] if choices else None


def _model_dims(case, is_output, i):
    return (case.out_model_dims if is_output else case.in_model_dims)[i]


def _explicit_dims(case, is_output, i, arg):
    """The argument's dimensions written out in full (the model's where the request gives none)."""
    return list(arg.dimensions) if arg.dimensions else list(_model_dims(case, is_output, i))


def _where(is_output, i):
    return f"{'output' if is_output else 'input'} {i}"


def m_dims_zero(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    dims = _explicit_dims(case, is_output, i, arg)
    axis = int(rng.integers(len(dims)))
    dims[axis] = 0
    arg.dimensions = dims
    model = _model_dims(case, is_output, i)
    # inputs must be fully specified; and nothing may put 0 where the model fixes the axis
    return f"{_where(is_output, i)} dims -> {dims}", (not is_output) or model[axis] != 0


def m_dims_change(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    dims = _explicit_dims(case, is_output, i, arg)
    axis = int(rng.integers(len(dims)))
    old = dims[axis]
    new = int(rng.choice([old + 1, max(old - 1, 1), int(rng.integers(1, 100)), -1, -(2**40), *HUGE]))
    if new == old:
        return None
    dims[axis] = new
    arg.dimensions = dims
    model = _model_dims(case, is_output, i)
    # an input's byte size no longer matches its (unchanged, nonzero) length
    certain = not 0 <= new <= UINT32_MAX or model[axis] != 0 or not is_output
    return f"{_where(is_output, i)} dims -> {dims}", certain


def m_dims_insert(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    dims = _explicit_dims(case, is_output, i, arg)
    dims.insert(int(rng.integers(len(dims) + 1)), int(rng.choice([0, 1, 2, 7])))
    arg.dimensions = dims
    return f"{_where(is_output, i)} dims -> {dims}", True  # rank differs from the model's


def m_dims_drop(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    dims = _explicit_dims(case, is_output, i, arg)
    del dims[int(rng.integers(len(dims)))]
    arg.dimensions = dims
    return f"{_where(is_output, i)} dims -> {dims}", bool(dims)  # [] means "as the model says"


def m_dims_garbage(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    bad = [None, "24", (2.0, 4.0), [True, 4], np.array([2, 4]), [None], 7][int(rng.integers(7))]
    arg.dimensions = bad
    return f"{_where(is_output, i)} dims -> {bad!r}", True


def _pool_size(req, arg):
    return req.pools[arg.location.pool_index].size


def m_pool_index(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    n = len(req.pools)
    new = int(rng.choice([n, n + 1, -1, *HUGE, *range(n)]))
    if new == arg.location.pool_index:
        return None
    arg.location.pool_index = new
    return f"{_where(is_output, i)} pool_index -> {new}", not 0 <= new < n


def m_offset(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    loc, size = arg.location, _pool_size(req, arg)
    new = int(rng.choice([-1, -(2**33), size, size - loc.length + 1, *HUGE,
                          int(rng.integers(0, size)), int(rng.integers(0, 8)) * 4, 1, 2]))
    if new == loc.offset:
        return None
    loc.offset = new
    return f"{_where(is_output, i)} offset -> {new}", new < 0 or new + loc.length + loc.padding > size


def m_length(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    loc, size = arg.location, _pool_size(req, arg)
    old = loc.length
    new = int(rng.choice([0, -1, old - 1, old + 1, old + 4, old * 2, old // 2, size, size + 1, *HUGE]))
    if new == old:
        return None
    loc.length = new
    model = _model_dims(case, is_output, i)
    shape_known = (not is_output) or 0 not in model  # then the length must equal the byte size
    certain = new <= 0 or new > UINT32_MAX or loc.offset + new + loc.padding > size or shape_known
    return f"{_where(is_output, i)} length -> {new}", certain


def m_padding(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    loc, size = arg.location, _pool_size(req, arg)
    new = int(rng.choice([-1, 1, 4, 16, size, *HUGE]))
    loc.padding = new
    return f"{_where(is_output, i)} padding -> {new}", new < 0 or loc.offset + loc.length + new > size


def m_location_garbage(rng, case, req):
    is_output, i, arg = _pick(rng, req)
    field_ = ["pool_index", "offset", "length", "padding"][int(rng.integers(4))]
    bad = [None, 1.5, "8", True, np.float32(0)][int(rng.integers(5))]
    setattr(arg.location, field_, bad)
    return f"{_where(is_output, i)} location.{field_} -> {bad!r}", True


def m_location_not_data_location(rng, case, req):
    """A location that is not a DataLocation at all."""
    is_output, i, arg = _pick(rng, req)
    arg.location = [None, (0, 0, 32), 0][int(rng.integers(3))]
    return f"{_where(is_output, i)} location -> {arg.location!r}", True


def m_no_value_on(rng, case, req):
    """Mark an argument NO_VALUE, keeping its location (a NO_VALUE argument needs an all-zero one)."""
    is_output, i, arg = _pick(rng, req)
    arg.has_no_value = True
    return f"{_where(is_output, i)} has_no_value -> True (location kept)", True


def m_omit(rng, case, req):
    """Omit an argument properly (all-zero location, no dimensions): valid only for optional inputs."""
    is_output, i, arg = _pick(rng, req)
    arg.has_no_value, arg.location, arg.dimensions = True, DataLocation(), []
    return f"{_where(is_output, i)} omitted", is_output or i not in case.omittable


def m_no_value_off(rng, case, req):
    """Un-omit an omitted input: its all-zero location has length 0."""
    omitted = [(i, a) for i, a in enumerate(req.inputs) if a.has_no_value]
    if not omitted:
        return None
    i, arg = omitted[int(rng.integers(len(omitted)))]
    arg.has_no_value = False
    return f"input {i} has_no_value -> False", True


def m_no_value_garbage(rng, case, req):
    is_output, i, arg = _pick(rng, req, present=False)
    bad = [1, 0, None, "yes"][int(rng.integers(4))]
    arg.has_no_value = bad
    return f"{_where(is_output, i)} has_no_value -> {bad!r}", True


def _out_of_range(req):
    return any(not a.has_no_value and a.location.pool_index >= len(req.pools) for _o, _i, a in _args(req))


def m_pool_remove(rng, case, req):
    k = int(rng.integers(len(req.pools)))
    del req.pools[k]
    return f"pool {k} removed", _out_of_range(req)


def m_pool_duplicate(rng, case, req):
    k = int(rng.integers(len(req.pools)))
    req.pools.append(req.pools[k])
    what = f"pool {k} duplicated"
    if rng.random() < 0.5:  # and move an argument onto the duplicate
        is_output, i, arg = _pick(rng, req)
        arg.location.pool_index = len(req.pools) - 1
        what += f", {_where(is_output, i)} moved onto it"
    return what, False


def m_pool_insert_front(rng, case, req):
    req.pools.insert(0, SharedMemory(int(rng.choice([16, 64, 4096]))))
    return "pool inserted in front (indexes shift)", False


def m_pool_replace(rng, case, req):
    k = int(rng.integers(len(req.pools)))
    kind = int(rng.integers(6))
    new = [None, 0, -3, "pool", SharedMemory(16), 987654321][kind]
    req.pools[k] = new
    # a token > 0 names no live buffer (DriverError, whatever its status); a 16-byte pool may fit
    return f"pool {k} -> {new!r}", kind < 4


def m_pools_garbage(rng, case, req):
    req.pools = [[], None, "pools"][int(rng.integers(3))]
    return f"pools -> {req.pools!r}", True


def m_arg_count(rng, case, req):
    which = "inputs" if rng.random() < 0.5 else "outputs"
    args = getattr(req, which)
    kind = int(rng.integers(4))
    if kind == 0 and args:
        del args[int(rng.integers(len(args)))]
    elif kind == 1 and args:
        k = int(rng.integers(len(args)))
        a = args[k]
        args.append(RequestArgument(DataLocation(a.location.pool_index, a.location.offset, a.location.length),
                                    list(a.dimensions), a.has_no_value))
    elif kind == 2:
        setattr(req, which, [])
    else:
        setattr(req, which, None)
    return f"{which} count mutation #{kind}", True


def m_arg_garbage(rng, case, req):
    which = "inputs" if rng.random() < 0.5 else "outputs"
    args = getattr(req, which)
    if not args:
        return None
    args[int(rng.integers(len(args)))] = [None, 0, DataLocation(0, 0, 8)][int(rng.integers(3))]
    return f"{which} entry replaced by garbage", True


MUTATIONS = [m_dims_zero, m_dims_zero, m_dims_change, m_dims_insert, m_dims_drop, m_dims_garbage,
             m_pool_index, m_offset, m_length, m_padding, m_location_garbage, m_location_not_data_location,
             m_no_value_on, m_omit, m_no_value_off, m_no_value_garbage,
             m_pool_remove, m_pool_duplicate, m_pool_insert_front, m_pool_replace, m_pools_garbage,
             m_arg_count, m_arg_garbage]


def mutate(rng, case):
    """A fresh mutated request of ``case``: (request, description, certainly_invalid).  Mostly one
    mutation (then certainly_invalid is the mutation's verdict); sometimes 2-3 stacked, which only
    have to end in success or a DriverError."""
    count = 1 if rng.random() < 0.75 else int(rng.integers(2, 4))
    for _attempt in range(100):
        req = case.make_request()
        done, certain = [], False
        for _ in range(count):
            mutation = MUTATIONS[int(rng.integers(len(MUTATIONS)))]
            try:
                result = mutation(rng, case, req)
            except (TypeError, AttributeError, IndexError, ValueError):
                result = None  # an earlier stacked mutation left nothing this one can edit
            if result is None:
                break
            done.append(result[0])
            certain = result[1] if count == 1 else False
        else:
            return req, "; ".join(done), certain
    raise AssertionError("no applicable mutation")


# ---- the fuzz loop -----------------------------------------------------------------------------------

# the execution entry points taking a Request, used in turn
PATHS = [lambda prepared, req: prepared.execute_synchronously(req),
         lambda prepared, req: prepared.execute_asynchronously(req).result(timeout=60),
         lambda prepared, req: prepared.create_reusable_execution(req).compute()]


def _fuzz(device_name, case_index, n, seed):
    case = CASES[case_index]()
    device = gd.get_device(device_name)
    prepared = device.prepare_model(case.model)
    base = case.make_request()
    shapes, _timing = prepared.execute_synchronously(base)
    case.check(base, shapes)

    rng = np.random.default_rng([seed, case_index])
    problems, stats = [], {"ok": 0, "invalid": 0, "other_error": 0, "certain": 0}
    for k in range(n):
        req, what, certain = mutate(rng, case)
        stats["certain"] += certain
        path = PATHS[k % len(PATHS)]
        what = f"#{k} [path {k % len(PATHS)}] {what}"
        try:
            path(prepared, req)
        except DriverError as err:
            if err.status == ErrorStatus.INVALID_ARGUMENT:
                stats["invalid"] += 1
            else:
                stats["other_error"] += 1
                if certain:
                    problems.append(f"{what}: {err.status.name} ({err.message}), expected INVALID_ARGUMENT")
            continue
        except BaseException as exc:  # noqa: BLE001 - anything but DriverError is the bug we look for
            problems.append(f"{what}: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}")
            continue
        stats["ok"] += 1
        if certain:
            problems.append(f"{what}: accepted, expected INVALID_ARGUMENT")
    assert not problems, f"{len(problems)} of {n} mutated requests misbehaved on {device_name}:\n" + \
        "\n".join(problems[:15])
    # the fuzzing was not degenerate: some requests ran, most were refused
    assert stats["ok"] > 0 and stats["certain"] > n // 3, stats
    # and the prepared model still runs the original request correctly
    base = case.make_request()
    shapes, _timing = prepared.execute_synchronously(base)
    case.check(base, shapes)
    return stats


@pytest.mark.parametrize("case_index", range(len(CASES)), ids=CASE_IDS)
@pytest.mark.parametrize("device_name", _devices())
def test_request_mutations(device_name, case_index):
    _fuzz(device_name, case_index, n=1000, seed=20240611)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("case_index", range(len(CASES)), ids=CASE_IDS)
@pytest.mark.parametrize("device_name", _devices())
def test_request_mutations_many(device_name, case_index, seed):
    _fuzz(device_name, case_index, n=4000, seed=seed)


def test_zero_where_model_fixes_dimension_is_invalid_everywhere():
    """The original bug: request dims [0, 4] for a model input declared [2, 4] ran on every device."""
    for name in [n for n in _devices() if isinstance(n, str)]:
        case = _add_case()
        prepared = gd.get_device(name).prepare_model(case.model)
        for is_output, pos in [(False, 0), (False, 1), (True, 0)]:
            req = case.make_request()
            (req.outputs if is_output else req.inputs)[pos].dimensions = [0, 4]
            with pytest.raises(DriverError) as info:
                prepared.execute_synchronously(req)
            assert info.value.status == ErrorStatus.INVALID_ARGUMENT, (name, info.value)
            assert "dimension 0 is 0" in info.value.message, info.value.message


@pytest.mark.parametrize("bad_location", [None, (0, 0, 32)], ids=["None", "tuple"])
def test_location_that_is_not_a_data_location(bad_location):
    case = _add_case()
    prepared = gd.get_device("reference").prepare_model(case.model)
    req = case.make_request()
    req.inputs[0].location = bad_location
    with pytest.raises(DriverError) as info:
        prepared.execute_synchronously(req)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT

"""Mutated conformance cases: every instance gets either a result or a DriverError, never a raw
exception, on every device; where the reference device and an accelerator both run a mutated
model, their outputs agree within the AOSP tolerances.

Mutations (deterministic per case): a scalar argument replaced by another value (0, 1, −1, 3, a
large one), a tensor argument's value replaced (zeros, negative, large), an input's dimensions
changed, an operand type changed, the last input dropped, an output's quantization changed.
"""
from __future__ import annotations

import copy
import random

import numpy as np
import pytest

import gpu_driver
from gpu_driver.errors import DriverError

from gpu_driver.hal.types import OperationType

from .aosp_cases import build_model, check_outputs, inputs_of, load, operation_names, versions

#: one case in SAMPLE of each spec folder is mutated (under slow: every case)
SAMPLE = 40
# scalars are counts, sizes, axes, codes: 100 is out of range for axes and codes, yet small enough as a
# size (an output height, a sampling ratio) for the reference device's Python loops
SCALAR_VALUES = (0, 1, -1, 3, 100)
TYPES = ("TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED",
         "TENSOR_BOOL8", "INT32", "FLOAT32", "BOOL")


def _mutations(case: dict, rng: random.Random) -> list[tuple[str, dict]]:
    main = case["main"]
    out = []
    ops = main["operations"]
    if not ops:
        return out
    name, ins, outs = ops[-1]
    for pos, idx in enumerate(ins):
        o = main["operands"][idx]
        if o["lifetime"] in ("CONSTANT_COPY", "CONSTANT_REFERENCE") and o["data"]:
            m = copy.deepcopy(case)
            mo = m["main"]["operands"][idx]
            if not o["dims"]:
                mo["data"] = [rng.choice(SCALAR_VALUES) if o["type"] == "INT32" else
                              (not o["data"][0]) if o["type"] == "BOOL" else rng.choice((0.0, -1.0, 1e9))]
            else:
                kind = rng.choice(("zeros", "negative", "large"))
                # "large" stays small enough that a mutated size argument (TILE multiples, FILL
                # dims) cannot ask for gigabytes, yet is out of range for axes and indices
                mo["data"] = [0 if kind == "zeros" else (-2 if kind == "negative" else 7)
                              for _ in o["data"]] if "INT" in o["type"] or "QUANT" in o["type"] else \
                    [0.0 if kind == "zeros" else (-2.0 if kind == "negative" else 1e6) for _ in o["data"]]
                if "QUANT8" in o["type"]:
                    lo, hi = (-128, 127) if "SIGNED" in o["type"] or "SYMM" in o["type"] else (0, 255)
                    mo["data"] = [min(max(v, lo), hi) for v in mo["data"]]
                if o["type"] == "TENSOR_BOOL8":
                    mo["data"] = [int(bool(v)) for v in mo["data"]]
            out.append((f"{name} input {pos} value", m))
    for pos, idx in enumerate(main["inputs"]):
        o = main["operands"][idx]
        if o["dims"]:
            m = copy.deepcopy(case)
            mo = m["main"]["operands"][idx]
            dims = list(o["dims"])
            axis = rng.randrange(len(dims))
            dims[axis] = dims[axis] + 1
            mo["dims"] = dims
            n = int(np.prod(dims))
            data = list(o["data"] or [0])
            mo["data"] = (data * (n // len(data) + 1))[:n]
            out.append((f"input {pos} dims {dims}", m))
            break
    idx = ins[0]
    m = copy.deepcopy(case)
    mo = m["main"]["operands"][idx]
    new_type = rng.choice([t for t in TYPES if t != mo["type"] and t.startswith("TENSOR") == mo["type"].startswith("TENSOR")])
    mo["type"] = new_type
    mo["scale"], mo["zp"] = (0.5, 1 if new_type == "TENSOR_QUANT8_ASYMM" else 0) if "QUANT" in new_type else (0.0, 0)
    if mo["data"] is not None:
        mo["data"] = [int(bool(v)) if new_type in ("TENSOR_BOOL8", "BOOL") else
                      (0 if ("INT" in new_type or "QUANT" in new_type) else float(v) if not isinstance(v, str) else 0.0)
                      for v in mo["data"]]
    out.append((f"{name} input 0 type {new_type}", m))
    if len(ins) > 1:
        m = copy.deepcopy(case)
        m["main"]["operations"][-1][1] = ins[:-1]
        out.append((f"{name} without its last input", m))
    o = main["operands"][outs[0]]
    if "QUANT" in o["type"]:
        m = copy.deepcopy(case)
        m["main"]["operands"][outs[0]]["scale"] = o["scale"] * 2
        out.append((f"{name} output scale doubled", m))
    return out


def _run(device, case: dict):
    """The outputs, or the DriverError; anything else propagates (the test fails on it)."""
    try:
        model = build_model(case)
        if not all(device.get_supported_operations(model)):
            return None
        return device.prepare_model(model).execute(inputs_of(case))
    except DriverError as exc:
        return exc


def _check(version: str, sample: int):
    reference = gpu_driver.get_device("reference")
    accelerators = [d for d in gpu_driver.get_devices() if d.name != "reference"]
    disagreements = []
    for i, case in enumerate(load(version)):
        if i % sample or case["expect_failure"] or \
                not all(n in OperationType.__members__ for n in operation_names(case)):
            continue
        rng = random.Random(f"{version}/{case['name']}")
        for what, mutated in _mutations(case, rng):
            expected = _run(reference, mutated)
            for device in accelerators:
                actual = _run(device, mutated)
                if isinstance(expected, list) and isinstance(actual, list):
                    golden = copy.deepcopy(mutated)
                    # a mutated 1e6 weight makes float sums cancel, so the summation order shows
                    # beyond the float32 tolerance: mutated cases compare at the relaxed one
                    golden["relaxed"] = True
                    for k, idx in enumerate(golden["main"]["outputs"]):
                        golden["main"]["operands"][idx]["data"] = np.asarray(expected[k]).reshape(-1).tolist()
                        golden["main"]["operands"][idx]["dims"] = list(np.shape(expected[k]))
                    problem = check_outputs(golden, actual)
                    if problem:
                        disagreements.append(f"{case['name']} ({what}) on {device.name}: {problem}")
    assert not disagreements, "\n".join(disagreements[:30])


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("version", versions())
def test_mutated_cases_give_results_or_driver_errors(version):
    _check(version, SAMPLE)


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("version", versions())
def test_every_mutated_case(version):
    _check(version, 1)

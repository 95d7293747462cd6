"""The AOSP NNAPI conformance cases (expanded by expand_aosp_specs.py) as HAL models, run on a device.

A case becomes a :class:`gpu_driver.hal.model.Model` with the operand indexes, lifetimes and
constant placement the AOSP test generator chose.  :func:`run_case` prepares and executes it on a
device and judges the outputs with the AOSP test harness's accuracy criteria (TestHarness.cpp):
float32 within 1e-5 + 5 ULP·|expected|, float16 — and float32 in relaxed models or models with any
float16 operand — within 5·2⁻¹⁰ (absolute and relative), integer and quantized types within 1
(3 for the mobilenet models), booleans exactly.  With ``dynamic=True`` every model output is
declared with unknown dimensions (of the same rank), as the AOSP dynamic-output-shape tests do.

Outcomes: ``pass``; ``fail`` (wrong values or shapes); ``unsupported`` (the device said False for an
operation of a valid model); ``refused`` (a DriverError at validation, preparation or execution for
a case expected to work); ``crash`` (any other exception); ``above_level`` (the case needs a feature
level above the device's and the device refused it, as it must); ``expected_failure`` (a case the
specs mark as failing, and the driver reported an error).
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import math
import os
import traceback
from functools import lru_cache

import numpy as np

from gpu_driver.errors import DriverError
from gpu_driver.hal.model import DataLocation, Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams
from gpu_driver.hal.types import OPERAND_TYPE_INFO, OperandLifeTime, OperandType, OperationType
from gpu_driver.memory import SharedMemory
from gpu_driver.validation import experimental_enabled

CASES_DIR = os.path.join(os.path.dirname(__file__), "cases")

#: the NNAPI feature level each spec folder's cases need
VERSION_LEVEL = {"V1_0": 1, "V1_1": 2, "V1_2": 3, "V1_3": 4, "V1_3_cts_only": 4, "AIDL_V1": 5,
                 "AIDL_V2": 6, "AIDL_V3": 7, "experimental": 99}

F32_TOL = (1e-5, 5.0 * 2.0 ** -23)
F16_TOL = (5.0 * 2.0 ** -10, 5.0 * 2.0 ** -10)


@lru_cache(maxsize=None)
def load(version: str) -> list[dict]:
    """The cases of one spec folder (e.g. "V1_2")."""
    with gzip.open(os.path.join(CASES_DIR, f"{version}.json.gz"), "rt") as f:
        return json.load(f)


def versions() -> list[str]:
    return sorted(name.split(".")[0] for name in os.listdir(CASES_DIR) if name.endswith(".json.gz"))


def operation_names(case: dict) -> list[str]:
    """The operation types of the case, main subgraph first."""
    names = [op[0] for op in case["main"]["operations"]]
    for sg in case["referenced"]:
        names.extend(op[0] for op in sg["operations"])
    return names


def _array(operand: dict) -> np.ndarray:
    dtype = OPERAND_TYPE_INFO[OperandType[operand["type"]]].dtype
    data = [float(x) if isinstance(x, str) else x for x in operand["data"] or []]
    if dtype == np.bool_:
        return np.asarray(data, dtype=np.uint8).astype(np.bool_)
    return np.asarray(data, dtype=np.float64 if dtype.kind == "f" else np.int64).astype(dtype)


def _subgraph(sg: dict, values: bytearray, pool: bytearray, dynamic: bool) -> Subgraph:
    operands = []
    for o in sg["operands"]:
        t = OperandType[o["type"]]
        lifetime = OperandLifeTime[o["lifetime"]]
        cq = o["channel_quant"]
        operand = Operand(type=t, dimensions=list(o["dims"]), scale=o["scale"], zero_point=o["zp"],
                          lifetime=lifetime,
                          extra_params=SymmPerChannelQuantParams(list(cq["scales"]), cq["dim"]) if cq else None)
        if lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE) and not o["data"]:
            # an empty constant: AOSP's test harness passes it to setOperandValue with length 0, which
            # the NNAPI runtime records as an omitted operand (NO_VALUE)
            operand.lifetime = OperandLifeTime.NO_VALUE
        elif lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
            data = np.ascontiguousarray(_array(o)).astype(OPERAND_TYPE_INFO[t].dtype.newbyteorder("<"))
            raw = data.view(np.uint8).tobytes() if data.dtype != np.bool_ else data.astype(np.uint8).tobytes()
            store, align, pool_index = (values, 4, 0) if lifetime == OperandLifeTime.CONSTANT_COPY else (pool, 64, 0)
            store.extend(b"\0" * ((-len(store)) % align))
            operand.location = DataLocation(pool_index, len(store), len(raw))
            store.extend(raw)
        elif lifetime == OperandLifeTime.SUBGRAPH:
            operand.location = DataLocation(0, int(o["data"][0]), 0)
        if dynamic and lifetime == OperandLifeTime.SUBGRAPH_OUTPUT and OPERAND_TYPE_INFO[t].is_tensor:
            operand.dimensions = [0] * len(operand.dimensions)
        operands.append(operand)
    ops = [Operation(OperationType[name], list(ins), list(outs)) for name, ins, outs in sg["operations"]]
    return Subgraph(operands, ops, list(sg["inputs"]), list(sg["outputs"]))


def build_model(case: dict, dynamic: bool = False) -> Model:
    """The case as a HAL model (dynamic: the main outputs' dimensions unknown)."""
    values, pool = bytearray(), bytearray()
    main = _subgraph(case["main"], values, pool, dynamic)
    referenced = [_subgraph(sg, values, pool, False) for sg in case["referenced"]]
    pools = [SharedMemory.from_bytes(bytes(pool))] if pool else []
    return Model(main=main, referenced=referenced, operand_values=bytes(values), pools=pools,
                 relax_computation_float32_to_float16=case["relaxed"])


def inputs_of(case: dict) -> list:
    """The request inputs (None for an input the case omits)."""
    out = []
    for idx in case["main"]["inputs"]:
        o = case["main"]["operands"][idx]
        if not o["data"]:  # the AOSP harness passes an input without data as omitted
            out.append(None)
        else:
            out.append(_array(o).reshape(o["dims"]))
    return out


def _uses_float16(case: dict) -> bool:
    return any(o["type"] in ("TENSOR_FLOAT16", "FLOAT16") for sg in [case["main"], *case["referenced"]]
               for o in sg["operands"])


def check_outputs(case: dict, actual: list[np.ndarray]) -> str | None:
    """None when every output meets the AOSP accuracy criteria, else what is wrong."""
    relaxed_float = case["relaxed"] or _uses_float16(case)
    quant_tol = 3 if "mobilenet" in case["name"] else 1
    for k, idx in enumerate(case["main"]["outputs"]):
        o = case["main"]["operands"][idx]
        if o["ignored"]:
            continue
        expected = _array(o).reshape(o["dims"])
        got = np.asarray(actual[k])
        if got.shape != expected.shape:
            return f"output {k}: shape {list(got.shape)}, expected {o['dims']}"
        if expected.dtype == np.bool_:
            bad = int(np.count_nonzero(got.astype(bool) != expected))
            if bad:
                return f"output {k}: {bad} booleans differ"
            continue
        if expected.dtype.kind == "f":
            atol, rtol = F16_TOL if relaxed_float or o["type"] == "TENSOR_FLOAT16" else F32_TOL
        else:
            atol, rtol = quant_tol, 0.0
        e = expected.astype(np.float64)
        a = got.astype(np.float64)
        err = np.abs(a - e) > atol + rtol * np.abs(e)
        err |= np.isnan(a) != np.isnan(e)
        if err.any():
            i = int(np.flatnonzero(err.reshape(-1))[0])
            return (f"output {k}: {int(err.sum())}/{err.size} values off, first at {i}: "
                    f"{a.reshape(-1)[i]!r} expected {e.reshape(-1)[i]!r}")
    return None


@dataclasses.dataclass
class Result:
    outcome: str
    detail: str = ""


def run_case(device, case: dict, dynamic: bool = False) -> Result:
    """Prepare and execute one case on ``device``; judge it (see the module docstring)."""
    level = VERSION_LEVEL.get(case["version"], 99)
    if any(name not in OperationType.__members__ for name in operation_names(case)):
        return Result("above_level", "an operation outside NNAPI's released operation codes")
    # experimental cases need the experimental switch, not a feature level
    above = not experimental_enabled() if level == VERSION_LEVEL["experimental"] else level > device.get_feature_level()
    try:
        model = build_model(case, dynamic)
        supported = device.get_supported_operations(model)
        if not all(supported) and not case["expect_failure"]:
            missing = sorted({case["main"]["operations"][i][0] for i, s in enumerate(supported) if not s})
            return Result("unsupported", ", ".join(missing))
        prepared = device.prepare_model(model)
        outputs = prepared.execute(inputs_of(case))
    except DriverError as exc:
        if above:
            return Result("above_level", str(exc))
        if case["expect_failure"]:
            return Result("expected_failure", str(exc))
        return Result("refused", f"{exc.status.name}: {exc}")
    except Exception as exc:  # noqa: BLE001 - a raw exception is what we report
        return Result("crash", "".join(traceback.format_exception_only(type(exc), exc)).strip()
                      + " @ " + traceback.extract_tb(exc.__traceback__)[-1].filename.split("gpu_driver/")[-1]
                      + ":" + str(traceback.extract_tb(exc.__traceback__)[-1].lineno))
    if case["expect_failure"]:
        return Result("fail", "expected a failure, the execution succeeded")
    if above:
        return Result("fail", f"needs feature level {level} (or, experimental, GPU_DRIVER_EXPERIMENTAL=1) but the "
                              f"device (level {device.get_feature_level()}) accepted it")
    problem = check_outputs(case, outputs)
    return Result("fail", problem) if problem else Result("pass")


GOOD = ("pass", "above_level", "expected_failure")

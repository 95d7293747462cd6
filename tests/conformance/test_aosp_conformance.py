"""The AOSP conformance cases (tests/conformance/cases, expanded from the AOSP test specs) on every
device: no wrong answer, crash or unexplained refusal, and no registered operation that the reference
device calls unsupported.  The reference device runs every case (with unknown output shapes one in
REFERENCE_DYNAMIC_SAMPLE); accelerators run a fixed sample of the cases by default (one in
ACCELERATOR_SAMPLE; on PoCL's threaded lane one in THREADED_SAMPLE; with a GPU's kernel choices
forced, one in GPU_KERNEL_SAMPLE of the operations those choices change).  Every case, on every device
and lane, runs under the ``slow`` mark.  The large versions' samples are split into shards (tests of
their own, so parallel workers share them)."""
from __future__ import annotations

import pytest

import gpu_driver
from gpu_driver.backends.base import GPU_KERNEL_CHOICES
from gpu_driver.hal.types import OperationType
from gpu_driver.ops.catalog import lookup

from .aosp_cases import load, operation_names, run_case, versions

#: outcomes that are always a defect
BAD = ("fail", "crash", "refused")
#: accelerators run every ACCELERATOR_SAMPLE-th case in the default selection
ACCELERATOR_SAMPLE = 32
#: and every THREADED_SAMPLE-th case (another subset) with every model compiled for the threaded lane
THREADED_SAMPLE = 128
#: the reference device runs every case with its output shapes given, and every
#: REFERENCE_DYNAMIC_SAMPLE-th with them left unknown (every case in the slow tier)
REFERENCE_DYNAMIC_SAMPLE = 4
#: shards of a version's sample (the others are one test each)
SHARDS = {"V1_2": 6, "V1_3": 3}


def _registered(case: dict) -> bool:
    """Every operation of the case is implemented by the driver (registered, or control flow)."""
    return all(name in ("IF", "WHILE") or (name in OperationType.__members__ and lookup(OperationType[name]))
               for name in operation_names(case))


def _problems(device, cases, dynamic: bool, strict_support: bool) -> list[str]:
    problems = []
    for case in cases:
        r = run_case(device, case, dynamic)
        if r.outcome in BAD or (strict_support and r.outcome == "unsupported" and _registered(case)):
            problems.append(f"{case['version']}/{case['name']}: {r.outcome}: {r.detail[:200]}")
    return problems


def _report(problems: list[str]) -> str:
    return f"{len(problems)} cases:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("version", versions())
def test_reference_device(version):
    problems = _problems(gpu_driver.get_device("reference"), load(version), False, strict_support=True)
    assert not problems, _report(problems)


@pytest.mark.parametrize("every", [REFERENCE_DYNAMIC_SAMPLE, pytest.param(1, marks=pytest.mark.slow)],
                         ids=["sample", "every_case"])
@pytest.mark.parametrize("version", versions())
def test_reference_device_dynamic_outputs(version, every):
    cases = [c for i, c in enumerate(load(version)) if i % every == 0]
    problems = _problems(gpu_driver.get_device("reference"), cases, True, strict_support=True)
    assert not problems, _report(problems)


def _accelerator_cases(version: str, sample: int, offset: int, shard: int) -> list[dict]:
    cases = [c for i, c in enumerate(load(version)) if i % sample == offset]
    shards = SHARDS.get(version, 1)
    return cases[shard::shards]


def _sharded_versions():
    return [pytest.param(v, shard, id=v if SHARDS.get(v, 1) == 1 else f"{v}-{shard + 1}of{SHARDS[v]}")
            for v in versions() for shard in range(SHARDS.get(v, 1))]


def _threaded_lane(accelerator, monkeypatch) -> None:
    """Every model compiled for the device's threaded lane (conformance models are small: on PoCL they
    would run on the inline lane)."""
    if getattr(accelerator.backend, "inline", None) is None:
        pytest.skip("the device has no inline lane: its only lane runs every sample")
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", "0")


@pytest.mark.parametrize("version,shard", _sharded_versions())
def test_accelerator_sample(accelerator, version, shard):
    cases = _accelerator_cases(version, ACCELERATOR_SAMPLE, 0, shard)
    problems = _problems(accelerator, cases, False, strict_support=False)
    assert not problems, _report(problems)


@pytest.mark.parametrize("version,shard", _sharded_versions())
def test_accelerator_sample_threaded_lane(accelerator, version, shard, monkeypatch):
    _threaded_lane(accelerator, monkeypatch)
    cases = _accelerator_cases(version, THREADED_SAMPLE, ACCELERATOR_SAMPLE // 2, shard)
    problems = _problems(accelerator, cases, False, strict_support=False)
    assert not problems, _report(problems)


#: the operations whose kernels a GPU's choices change (backends.base.GPU_KERNEL_CHOICES), and the
#: share of their cases run with those choices forced in the default selection
GPU_KERNEL_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX", "LOG_SOFTMAX",
                  "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"}
GPU_KERNEL_SAMPLE = 16


def _gpu_kernel_choices(accelerator, monkeypatch) -> None:
    """The device (every lane) takes a GPU's kernel choices for this test, compiling afresh."""
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    for lane in (accelerator.backend, getattr(accelerator.backend, "inline", None)):
        if lane is not None:
            for name, value in GPU_KERNEL_CHOICES.items():
                monkeypatch.setattr(lane.tuning, name, value)
            monkeypatch.setattr(lane.tuning, "compute_units", max(2, lane.tuning.compute_units))


@pytest.mark.parametrize("every", [GPU_KERNEL_SAMPLE, pytest.param(1, marks=pytest.mark.slow)],
                         ids=["sample", "every_case"])
def test_accelerator_with_gpu_kernel_choices(accelerator, every, monkeypatch):
    """The GPU's kernels (work-group GEMM and softmax, thin depthwise work items, pooling split to
    single channels) on whatever device runs the tests."""
    _gpu_kernel_choices(accelerator, monkeypatch)
    cases = [c for v in versions() for c in load(v) if GPU_KERNEL_OPS & set(operation_names(c))][::every]
    problems = _problems(accelerator, cases, False, strict_support=False)
    assert not problems, _report(problems)


@pytest.mark.slow
@pytest.mark.parametrize("lane", ["default", "threaded"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_outputs"])
@pytest.mark.parametrize("version", versions())
def test_accelerator_every_case(accelerator, version, dynamic, lane, monkeypatch):
    if lane == "threaded":
        _threaded_lane(accelerator, monkeypatch)
    problems = _problems(accelerator, load(version), dynamic, strict_support=False)
    assert not problems, _report(problems)

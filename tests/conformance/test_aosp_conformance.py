"""The AOSP conformance cases (tests/conformance/cases, expanded from the AOSP test specs) on every
device: no wrong answer, crash or unexplained refusal, and no registered operation that the reference
device calls unsupported.  Accelerators run a fixed sample of the cases by default (one in
ACCELERATOR_SAMPLE) and every case under the ``slow`` mark."""
from __future__ import annotations

import pytest

import gpu_driver
from gpu_driver.hal.types import OperationType
from gpu_driver.ops.catalog import lookup

from .aosp_cases import load, operation_names, run_case, versions

#: outcomes that are always a defect
BAD = ("fail", "crash", "refused")
#: accelerators run every ACCELERATOR_SAMPLE-th case in the default selection
ACCELERATOR_SAMPLE = 16


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


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_outputs"])
@pytest.mark.parametrize("version", versions())
def test_reference_device(version, dynamic):
    problems = _problems(gpu_driver.get_device("reference"), load(version), dynamic, strict_support=True)
    assert not problems, _report(problems)


def _accelerator_cases(version: str, sample: int, offset: int = 0) -> list[dict]:
    return [c for i, c in enumerate(load(version)) if i % sample == offset]


@pytest.mark.parametrize("version", versions())
def test_accelerator_sample(accelerator, version):
    problems = _problems(accelerator, _accelerator_cases(version, ACCELERATOR_SAMPLE), False, strict_support=False)
    assert not problems, _report(problems)


@pytest.mark.parametrize("version", versions())
def test_accelerator_sample_threaded_lane(accelerator, version, monkeypatch):
    """The conformance models are small: on PoCL they run on the inline lane.  Another sample of
    them on the device's threaded lane (every model compiled for it)."""
    if getattr(accelerator.backend, "inline", None) is None:
        pytest.skip("the device has no inline lane: the sample above ran on its only lane")
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", "0")
    cases = _accelerator_cases(version, ACCELERATOR_SAMPLE, ACCELERATOR_SAMPLE // 2)
    problems = _problems(accelerator, cases, False, strict_support=False)
    assert not problems, _report(problems)


@pytest.mark.slow
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_outputs"])
@pytest.mark.parametrize("version", versions())
def test_accelerator_every_case(accelerator, version, dynamic):
    problems = _problems(accelerator, load(version), dynamic, strict_support=False)
    assert not problems, _report(problems)

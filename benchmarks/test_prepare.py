"""Preparation time (graph → binary → launch list) of the benchmark models on the OpenCL device.

PoCL caches compiled kernels on disk (POCL_CACHE_DIR): the first round is a cold compile, later ones
may hit PoCL's cache; the min and max are both reported."""
import pytest

from gpu_driver.zoo import add_model, mobilenet_v1, mobilenet_v2

MODELS = {"add": add_model, "mobilenet_v1": mobilenet_v1, "mobilenet_v2": mobilenet_v2}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_prepare_time(benchmark, name, pocl):
    bm = MODELS[name]()
    benchmark.group = "prepare"
    benchmark.extra_info["model"] = bm.name
    benchmark.pedantic(pocl.prepare_model, args=(bm.model,), rounds=3, iterations=1)

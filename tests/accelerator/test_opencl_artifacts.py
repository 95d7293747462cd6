"""What the OpenCL backend stores as a compiled program on PoCL: the OpenCL C source (marked), built
again at load with PoCL's own kernel cache behind it.  PoCL 3.0 is asked for a program's binary sizes
(which compiles every kernel's generic work-group function ahead of the first launch) at most once per
program and process: each further ask would pin its kernels in PoCL's cache of loaded kernel binaries
for the life of the process (see README)."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.backends.opencl import SOURCE_ARTIFACT

SOURCE = """__kernel void scale_{tag}(__global float *x) {{ x[get_global_id(0)] *= {factor}.0f; }}"""


@pytest.fixture
def pocl_backend():
    for d in gd.get_devices():
        backend = getattr(d, "backend", None)
        if backend is not None and getattr(backend.session, "source_artifacts", False):
            return backend
    pytest.skip("no PoCL device")


@pytest.fixture
def size_queries(monkeypatch, pocl_backend):
    """The CL_PROGRAM_BINARY_SIZES queries made through pyopencl, counted."""
    cl = pocl_backend.session.cl
    asked = []
    get_info = cl.Program.get_info

    def counted(program, param):
        if param == cl.program_info.BINARY_SIZES:
            asked.append(program)
        return get_info(program, param)

    monkeypatch.setattr(cl.Program, "get_info", counted)
    return asked


def _run(backend, artifact: bytes, name: str, values: np.ndarray) -> np.ndarray:
    program = backend.launcher.load(artifact, [name])
    buf = backend.allocator.alloc(values.nbytes)
    backend.allocator.upload(buf, values)
    launch = backend.launcher.make_launch(program, name, [buf], [values.size], None)
    backend.launcher.enqueue([launch])
    backend.launcher.finish()
    return backend.allocator.download(buf, np.empty_like(values))


def test_artifact_is_the_source_and_runs_after_a_fresh_build(pocl_backend, size_queries):
    tag = f"a{np.random.default_rng().integers(1 << 40)}"  # a program no earlier test built
    source = SOURCE.format(tag=tag, factor=3)
    artifact = pocl_backend.compiler.compile(source)
    assert artifact == SOURCE_ARTIFACT + source.encode()
    assert len(size_queries) == 1  # the generic work-group functions compiled at preparation
    pocl_backend.session.built.clear()  # as in a new process: load builds the source again
    out = _run(pocl_backend, artifact, f"scale_{tag}", np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(out, [0, 3, 6, 9, 12])
    assert len(size_queries) == 1


def test_binary_sizes_asked_once_per_program(pocl_backend, size_queries):
    tag = f"b{np.random.default_rng().integers(1 << 40)}"
    source = SOURCE.format(tag=tag, factor=2)
    first = pocl_backend.compiler.compile(source)
    again = pocl_backend.compiler.compile(source)        # the program built in this process
    pocl_backend.session.built.clear()
    third = pocl_backend.compiler.compile(source)        # built again, not asked again
    assert first == again == third and len(size_queries) == 1
    # a program loaded before it is compiled in the process is never asked either
    loaded = SOURCE.format(tag=tag + "l", factor=4)
    out = _run(pocl_backend, SOURCE_ARTIFACT + loaded.encode(), f"scale_{tag}l", np.ones(3, np.float32))
    np.testing.assert_array_equal(out, [4, 4, 4])
    pocl_backend.compiler.compile(loaded)
    assert len(size_queries) == 1


def test_a_corrupt_source_artifact_is_a_general_failure(pocl_backend):
    with pytest.raises(gd.DriverError) as err:
        pocl_backend.launcher.load(SOURCE_ARTIFACT + b"\xff\xfe not utf-8", ["k"])
    assert err.value.status == gd.ErrorStatus.GENERAL_FAILURE

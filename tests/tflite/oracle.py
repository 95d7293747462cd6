"""LiteRT, the independent oracle of the import tests: a fresh interpreter per model (zero state)."""
from __future__ import annotations

import pytest

Interpreter = pytest.importorskip("ai_edge_litert.interpreter").Interpreter


def litert(data: bytes, feed):
    """The outputs LiteRT computes for the TF Lite model ``data`` on the inputs ``feed``."""
    it = Interpreter(model_content=data, num_threads=1)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feed):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def assert_matches(actual, expected, key: str, *, tolerance: float = 1e-5, integer_steps: int = 0) -> None:
    """Each output of the driver against LiteRT's: shapes equal; floats within ``tolerance`` (absolute
    and relative); integers (quantized steps) within ``integer_steps``."""
    import numpy as np

    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{key}: shape {a.shape} vs LiteRT {e.shape}"
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, atol=tolerance, rtol=tolerance, err_msg=key)
        else:
            assert np.abs(a.astype(np.int64) - e.astype(np.int64)).max(initial=0) <= integer_steps, key


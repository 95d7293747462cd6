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

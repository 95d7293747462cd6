"""TF Lite models for the driver: ``load_model(path | bytes | file) -> ImportedModel``.

``imported.model`` is a validated :class:`gpu_driver.hal.model.Model` ready for
``device.prepare_model``; ``imported.inputs`` / ``imported.outputs`` name the TF Lite subgraph's
tensors in order (:class:`TensorSpec`: name, shape (−1 for a dimension unknown until execution
with ``dynamic_dims=True``), numpy dtype).
Needs the ``tflite`` extra (``pip install 'gpu_driver[tflite]'``).
"""
from __future__ import annotations

from ..builder import ModelBuilder
from ..errors import invalid
from .importer import ImportedModel, TensorSpec, import_subgraph, specs
from .operators import CONVERTERS
from .reader import read_model

__all__ = ["ImportedModel", "TensorSpec", "load_model"]


def load_model(source, *, dynamic_dims: bool = False) -> ImportedModel:
    """Import a ``.tflite`` model (its first subgraph is the main graph).

    Dimensions the model leaves open (−1 in a tensor's shape signature, typically the batch) take
    the size TF Lite allocates by default, as TF Lite's interpreter and its NNAPI delegate do; with
    ``dynamic_dims=True`` they stay unknown until execution (NNAPI dynamic shapes), which fails for
    operators that need known dimensions at import.

    Raises DriverError(INVALID_ARGUMENT) for a truncated or corrupt file, and for operators with no
    NNAPI equivalent (the message lists each one: index, name, why)."""
    if not isinstance(dynamic_dims, bool):
        raise invalid(f"dynamic_dims must be True or False, got {dynamic_dims!r}")
    tfl = read_model(source)
    main = tfl.subgraphs[0]
    builder = ModelBuilder()
    import_subgraph(tfl, main, builder, CONVERTERS, dynamic_dims)
    model = builder.finish()
    return ImportedModel(model, specs(main, main.inputs, dynamic_dims), specs(main, main.outputs, dynamic_dims))

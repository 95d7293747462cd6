"""TF Lite models for the driver: ``load_model(path | bytes | file) -> ImportedModel``.

``imported.model`` is a validated :class:`gpu_driver.hal.model.Model` ready for
``device.prepare_model``; ``imported.inputs`` / ``imported.outputs`` name the TF Lite subgraph's
tensors in order (:class:`TensorSpec`: name, shape with -1 for unknown dimensions, numpy dtype).
Needs the ``tflite`` extra (``pip install 'gpu_driver[tflite]'``).
"""
from __future__ import annotations

from ..builder import ModelBuilder
from .importer import ImportedModel, TensorSpec, import_subgraph, specs
from .operators import CONVERTERS
from .reader import read_model

__all__ = ["ImportedModel", "TensorSpec", "load_model"]


def load_model(source) -> ImportedModel:
    """Import a ``.tflite`` model (its first subgraph is the main graph).

    Raises DriverError(INVALID_ARGUMENT) for a truncated or corrupt file, and for operators with no
    NNAPI equivalent (the message lists each one: index, name, why)."""
    tfl = read_model(source)
    main = tfl.subgraphs[0]
    builder = ModelBuilder()
    import_subgraph(tfl, main, builder, CONVERTERS)
    model = builder.finish()
    return ImportedModel(model, specs(main, main.inputs), specs(main, main.outputs))

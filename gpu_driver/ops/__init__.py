"""The operations: one module per family, each holding everything about its operations.

Per operation, its family module (e.g. ``pooling.py``) declares the signature (operand types per
feature level, counts, ranks, quantization rules), the definition (argument decoding, constraints,
shape inference), the numpy reference kernel, and the lowering to kernel templates in
``opencl_kernels/ops/`` with its support predicate and fused-activation position, all registered
through :func:`gpu_driver.ops.registry.operation`.  Import :mod:`gpu_driver.ops.catalog` for the
filled registry.
"""

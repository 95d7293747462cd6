"""The reference device: numpy CPU executor (the oracle for every accelerator backend).

- device: ReferenceDevice (HAL IDevice) and ReferencePreparedModel;
- executor: ReferenceExecutor, running a model's operations in numpy;
- host_allocator: HostAllocator, the device's allocator over host memory;
- kernels, registry: the numpy kernel of each operation.

Nothing is imported here, so the kernels can be used without the device layer.
"""

"""The device-independent runtime: the HAL IDevice and IPreparedModel base classes, device discovery,
and memory domains (driver-managed buffers).

- device: Device (HAL IDevice) and its argument checks;
- discovery: get_devices / get_device / register_device_provider;
- prepared_model: PreparedModel (HAL IPreparedModel), ExecutionContext, to_dtype;
- request_binding: a request validated, its pools resolved (BoundRequest);
- buffer_spec, buffer_allocation, driver_buffer, buffer_registry: IDevice::allocate and the IBuffer.

Nothing is imported here: discovery sits above the devices it builds, which import this package's
base classes.
"""

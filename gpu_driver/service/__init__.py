"""The driver as a service: one process owns the devices (``gpu-driver serve``, :func:`serve`), client
processes use them through :func:`connect` with the API of local devices.

Modules: ``wire`` (framing, descriptors), ``codec`` (HAL values in messages), ``server`` (listening,
credentials), ``session`` (one client's handles and calls), ``fence_relay`` (fences as pipes),
``client`` (the connection), ``remote_device`` and ``remote_prepared_model`` (the client-side HAL
objects).
"""
from .client import Connection, connect
from .server import Server, default_socket_path, serve
from .session import Limits

__all__ = ["Connection", "Limits", "Server", "connect", "default_socket_path", "serve"]

"""The one exception type that crosses the driver boundary."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .hal.types import ErrorStatus, OutputShape


class DriverError(Exception):
    """A failed HAL call: carries the HAL ``ErrorStatus`` and a human-readable message.

    ``output_shapes`` is filled only for ``OUTPUT_INSUFFICIENT_SIZE`` (HAL 1.3 executeSynchronously_1_3
    returns the shapes together with that status).
    """

    def __init__(self, status: "ErrorStatus", message: str, output_shapes: "list[OutputShape] | None" = None):
        from .hal.types import ErrorStatus  # here, not at module level: hal imports this module

        self.status = ErrorStatus(status)
        self.message = message
        self.output_shapes = list(output_shapes or [])
        super().__init__(f"{self.status.name}: {message}")


def invalid(message: str) -> DriverError:
    """Shorthand for a client-input violation (INVALID_ARGUMENT = 4)."""
    return DriverError(4, message)


def failure(message: str) -> DriverError:
    """Shorthand for a device / internal failure (GENERAL_FAILURE = 2)."""
    return DriverError(2, message)


def not_supported_yet(what: str) -> DriverError:
    return DriverError(2, f"{what}: not supported yet")

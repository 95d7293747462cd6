"""numpy kernels of the reference device; importing this package registers them all."""
from . import binary  # noqa: F401

"""numpy kernels of the reference device; importing this package registers them all."""
from . import binary  # noqa: F401  (each import registers its kernels)
from . import conv, pool, fully_connected, concatenation  # noqa: F401
from . import activation, shape_ops, normalization, lookup, resize  # noqa: F401
from . import recurrent, lsh  # noqa: F401

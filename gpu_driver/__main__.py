"""``python -m gpu_driver``: the ``gpu-driver`` command line (see :mod:`gpu_driver.cli`)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())

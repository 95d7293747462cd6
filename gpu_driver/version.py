"""The driver's version: part of every device's HAL version string and of the compilation-cache identity."""
__version__ = "0.1.0"

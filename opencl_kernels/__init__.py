"""OpenCL C kernel sources (package data), loaded with importlib.resources."""

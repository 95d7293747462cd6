"""CUDA kernel sources (package data): the CUDA prelude that lets the shared kernels compile with NVRTC."""

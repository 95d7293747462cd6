"""Memory pools: shared memory, fd mappings, hardware buffers (see interface.md §4, §7.1)."""
from .base import Memory, memory_from_description, register_memory_kind
from .hardware_buffer import HardwareBuffer, HardwareBufferFormat, HardwareBufferUsage
from .mmap_fd import PROT_READ, PROT_WRITE, MmapFd
from .shared_memory import SharedMemory

__all__ = ["Memory", "SharedMemory", "MmapFd", "HardwareBuffer", "HardwareBufferFormat", "HardwareBufferUsage",
           "PROT_READ", "PROT_WRITE", "memory_from_description", "register_memory_kind"]

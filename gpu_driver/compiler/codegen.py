"""Code generation: one program source per model.

The source is the backend compiler's prelude (backends.base.Compiler.prelude) followed by every
distinct kernel instance: its template from ``opencl_kernels/ops/`` with ``${...}`` substituted
(string.Template) and a unique ``KERNEL_NAME``.  Identical instances (same template and defines) share
one kernel function.  Templates are written in the shared dialect, so the same text compiles as
OpenCL C or (CUDA prelude prepended) with NVRTC.
"""
from __future__ import annotations

import functools
import importlib.resources
import re
import string

from ..errors import failure
from .ir import KernelInstance, c_literal


@functools.lru_cache(maxsize=None)
def template_text(template: str) -> str:
    try:
        return importlib.resources.files("opencl_kernels").joinpath("ops", template).read_text()
    except (FileNotFoundError, OSError) as exc:
        raise failure(f"kernel template {template!r} not found: {exc}") from None


def _key(k: KernelInstance) -> tuple:
    return k.template, tuple(sorted((n, c_literal(v)) for n, v in k.defines.items()))


def instance_source(k: KernelInstance, name: str) -> str:
    values = {n: c_literal(v) for n, v in k.defines.items()}
    values["KERNEL_NAME"] = name
    try:
        return string.Template(template_text(k.template)).substitute(values)
    except (KeyError, ValueError) as exc:
        raise failure(f"kernel template {k.template}: missing or bad substitution {exc}") from None


def assign_names(kernels: list[KernelInstance]) -> list[str]:
    """Fill ``KernelInstance.name`` (deduplicated); returns the distinct names in program order."""
    names: dict[tuple, str] = {}
    for k in kernels:
        key = _key(k)
        if key not in names:
            stem = re.sub(r"[^A-Za-z0-9_]", "_", k.template.rsplit(".", 1)[0])
            names[key] = f"gd{len(names)}_{stem}"
        k.name = names[key]
    return list(names.values())


def generate(kernels: list[KernelInstance], prelude: str,
             local_sizes: dict[str, tuple[int, ...]] | None = None) -> str:
    """The program source of ``kernels`` (names assigned here if missing) after ``prelude``, the text
    that maps the shared dialect to the compiler's language.  ``local_sizes``: the one local size
    every launch of a kernel uses, declared on it (KERNEL_FIXED_LOCAL: the compiler builds its
    work-group code for that size; PoCL's generic code is measurably slower)."""
    if any(not k.name for k in kernels):
        assign_names(kernels)
    parts = [prelude]
    seen = set()
    for k in kernels:
        if k.name in seen:
            continue
        seen.add(k.name)
        parts.append(f"/* ---- {k.name}: {k.template} (node {k.node}) ---- */")
        local = (local_sizes or {}).get(k.name)
        if local is not None:
            x, y, z = (*local, 1, 1)[:3]
            parts.append(f"#undef KERNEL\n#define KERNEL KERNEL_FIXED_LOCAL({x}, {y}, {z})")
        parts.append(instance_source(k, k.name))
        if local is not None:
            parts.append("#undef KERNEL\n#define KERNEL KERNEL_ANY_LOCAL")
    return "\n".join(parts) + "\n"


def fixed_local_sizes(launches) -> dict[str, tuple[int, ...]]:
    """Kernel name -> its local size, for the kernels whose every launch (compiler.artifact
    KernelLaunch) states the same one."""
    sizes: dict[str, set] = {}
    for launch in launches:
        sizes.setdefault(launch.name, set()).add(None if launch.local_size is None else tuple(launch.local_size))
    return {name: next(iter(found)) for name, found in sizes.items() if len(found) == 1 and None not in found}

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


def generate(kernels: list[KernelInstance], prelude: str) -> str:
    """The program source of ``kernels`` (names assigned here if missing) after ``prelude``, the text
    that maps the shared dialect to the compiler's language."""
    if any(not k.name for k in kernels):
        assign_names(kernels)
    parts = [prelude]
    seen = set()
    for k in kernels:
        if k.name in seen:
            continue
        seen.add(k.name)
        parts.append(f"/* ---- {k.name}: {k.template} (node {k.node}) ---- */")
        parts.append(instance_source(k, k.name))
    return "\n".join(parts) + "\n"

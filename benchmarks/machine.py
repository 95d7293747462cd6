"""What a results page says about the machine it was measured on."""
from __future__ import annotations

import os
import platform
import subprocess


def cpu_model() -> str:
    """The CPU's model name (``lscpu``'s "Model name"), else what the platform module knows."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        out = ""
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}
    name = fields.get("Model name") or platform.processor() or platform.machine() or "unknown"
    details = [f"CPU family {fields['CPU family']}"] if fields.get("CPU family") else []
    if "avx512f" in fields.get("Flags", "").split():
        details.append("AVX-512")
    return f"{name} ({', '.join(details)})" if details else name


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as "0.57, 1.16, 1.83"."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())

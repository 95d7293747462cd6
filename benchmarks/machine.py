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
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as "0.57, 1.16, 1.83"."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())

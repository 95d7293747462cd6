"""Latency of an engine in its steady state, measured beside another engine in the same process.

Each timed execution, ours or a peer's (LiteRT, ONNX Runtime, the numpy reference device), is
measured in its engine's steady state (:func:`steady_latency_ms`): the engine first runs untimed
for :data:`WARM_UP_S` (at least once), while the other engine's threads stop spinning, and the next
run is timed, as in MLTS's loop of inferences.  Timed right after the other engine, a run shares the
cores with that engine's spinning threads and starts with its own asleep: on the 2-core VM ONNX
Runtime's pool spins for 20-50 ms after a run (our MobileNet v1 took 6.9 ms right after it, 4.7 ms
after a 50 ms pause), and face_detection_short_range took 1.03 ms right after LiteRT against
0.60 ms right after itself.  An idle pause instead of the warm-up slows both engines' next runs
(the VM's CPUs go idle): LiteRT's face_detection_short_range 0.37 ms in a loop, 0.73 ms after a
50 ms pause.  The same holds for numpy's OpenBLAS, whose threads spin about 0.1 s after a matrix
product (the reference device): ``gpu-driver bench`` warms each side up for :data:`BLAS_SPIN_S`.
"""
from __future__ import annotations

import time
from typing import Callable

#: seconds an engine runs untimed before its timed run: longer than the peers' thread pools spin
#: after a run (ONNX Runtime, LiteRT)
WARM_UP_S = 0.05
#: the same beside numpy's BLAS
BLAS_SPIN_S = 0.15


def warm_up(run: Callable[[], object], seconds: float = WARM_UP_S) -> None:
    """Call ``run`` untimed, again and again for ``seconds`` (at least once): what precedes a timed call."""
    end = time.perf_counter() + seconds
    run()
    while time.perf_counter() < end:
        run()


def steady_latency_ms(run: Callable[[], object], seconds: float = WARM_UP_S) -> float:
    """Milliseconds of one call of ``run`` made after ``seconds`` of untimed calls (module docstring)."""
    warm_up(run, seconds)
    t0 = time.perf_counter()
    run()
    return (time.perf_counter() - t0) * 1e3

"""Execution settings and their argument checks: timing measurement, deadlines, loop timeouts.

Deadlines are absolute times on the boot clock (hal.types.boot_time_ns, ns); durations are ns.
A deadline that has passed before an execution starts is MISSED_DEADLINE_PERSISTENT; one that
passes while it waits or runs is MISSED_DEADLINE_TRANSIENT (interface.md §7.5).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import DriverError, invalid
from ..hal.types import LOOP_TIMEOUT_DEFAULT_NS, LOOP_TIMEOUT_MAXIMUM_NS, NO_TIMING, ErrorStatus, MeasureTiming, Timing, \
    boot_time_ns


@dataclass
class ExecutionContext:
    """Per-execution settings after validation: absolute deadline (boot clock ns), loop timeout (ns)."""

    measure: bool
    deadline_ns: int | None
    loop_timeout_ns: int


def _optional_ns(value, what: str, unit: str) -> int | None:
    """None, or an int ≥ 0 (INVALID_ARGUMENT otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid(f"{what} must be None or a non-negative int ({unit}), got {value!r}")
    return value


def check_deadline_argument(deadline) -> int | None:
    return _optional_ns(deadline, "deadline", "ns on the boot clock")


def check_duration(duration, what: str) -> int | None:
    """An optional duration in ns (None or an int ≥ 0)."""
    return _optional_ns(duration, what, "ns")


def check_loop_timeout(duration) -> int:
    duration = check_duration(duration, "loop_timeout_duration")
    if duration is None:
        return LOOP_TIMEOUT_DEFAULT_NS
    if duration > LOOP_TIMEOUT_MAXIMUM_NS:
        raise invalid(f"loop_timeout_duration {duration} ns exceeds the maximum {LOOP_TIMEOUT_MAXIMUM_NS} ns")
    return duration


def check_measure(measure) -> bool:
    try:
        return MeasureTiming(measure) == MeasureTiming.YES
    except (ValueError, TypeError):
        raise invalid(f"measure_timing must be a MeasureTiming, got {measure!r}") from None


def execution_context(measure_timing, deadline, loop_timeout_duration) -> ExecutionContext:
    """The checked settings of one execution (INVALID_ARGUMENT for a bad value)."""
    return ExecutionContext(check_measure(measure_timing), check_deadline_argument(deadline),
                            check_loop_timeout(loop_timeout_duration))


def check_not_expired(deadline_ns: int | None) -> None:
    """MISSED_DEADLINE_PERSISTENT if the deadline had passed before the execution began."""
    if deadline_ns is not None and boot_time_ns() > deadline_ns:
        raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "the deadline had passed before execution")


def check_not_late(deadline_ns: int | None, when: str) -> None:
    """MISSED_DEADLINE_TRANSIENT if the deadline has passed (``when``: for the message)."""
    if deadline_ns is not None and boot_time_ns() > deadline_ns:
        raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, f"the deadline passed {when}")


def execution_timing(measure: bool, start_ns: int, device_ns: int | None, end_ns: int | None = None) -> Timing:
    """The Timing of an execution from ``start_ns`` to ``end_ns`` (perf_counter; default now): time in
    the driver, and the device time if measured (never more than the driver time)."""
    if not measure:
        return NO_TIMING
    in_driver_us = ((time.perf_counter_ns() if end_ns is None else end_ns) - start_ns) // 1000
    on_device_us = NO_TIMING.time_on_device if device_ns is None else min(device_ns // 1000, in_driver_us)
    return Timing(time_on_device=on_device_us, time_in_driver=in_driver_us)

"""VLOG-style verbose logging, like Android's ``debug.nn.vlog`` property.

``GPU_DRIVER_VLOG`` names the areas whose debug lines are wanted, separated by commas or spaces:
``compilation``, ``execution``, ``cache``, ``memory``, or ``all`` (``1`` means ``all`` too)::

    GPU_DRIVER_VLOG=cache,memory python my_app.py

Each area logs through the standard :mod:`logging` logger ``gpu_driver.<tag>`` at DEBUG level.  The
variable is read once, when this module is first imported.  A tag that is not named stays off even
when the application sets the root logger to DEBUG (its logger's level is INFO), so a disabled
``log.debug(...)`` costs one cached level check and formats nothing.  A named tag's logger is set to
DEBUG; its lines go to the application's handlers when it configured any (``logging.basicConfig``,
before or after importing the driver), and otherwise straight to ``sys.stderr``.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import threading

#: the environment variable read once at import
ENV_VAR = "GPU_DRIVER_VLOG"
#: the areas the driver logs
TAGS = ("compilation", "execution", "cache", "memory")
#: how a line printed by the driver's own handler looks
FORMAT = "%(name)s: %(message)s"


def parse_tags(text: str | None) -> frozenset[str]:
    """The tags named by a ``GPU_DRIVER_VLOG`` value; ``all`` and ``1`` stand for every tag."""
    words = {w for w in re.split(r"[\s,;:]+", (text or "").strip().lower()) if w}
    if words & {"all", "1"}:
        words = (words - {"1"}) | {"all"}
    return frozenset(words)


_ENABLED = parse_tags(os.environ.get(ENV_VAR))
_CONFIGURED: set[str] = set()
_LOCK = threading.Lock()


def enabled(tag: str) -> bool:
    """Whether ``GPU_DRIVER_VLOG`` (as read at import) turns ``tag`` on."""
    return "all" in _ENABLED or tag in _ENABLED


class _StderrUnlessConfigured(logging.StreamHandler):
    """Writes to the current ``sys.stderr``, unless the record also reaches a handler the application
    configured above the tag's logger (then that handler alone prints it, once)."""

    def __init__(self, logger: logging.Logger):
        logging.Handler.__init__(self)  # no stream of its own: ``stream`` is looked up at each line
        self._logger = logger
        self.setFormatter(logging.Formatter(FORMAT))

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    def emit(self, record: logging.LogRecord) -> None:
        parent = self._logger.parent
        if self._logger.propagate and parent is not None and parent.hasHandlers():
            return
        super().emit(record)


def vlog(tag: str) -> logging.Logger:
    """The logger ``gpu_driver.<tag>``: DEBUG lines on when ``GPU_DRIVER_VLOG`` names ``tag``, off otherwise.

    A level the application set on that logger itself is left as it is.
    """
    from .errors import invalid

    if not isinstance(tag, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", tag):
        raise invalid(f"a VLOG tag is a lower-case word, got {tag!r}")
    logger = logging.getLogger(f"gpu_driver.{tag}")
    with _LOCK:
        if tag not in _CONFIGURED:
            _CONFIGURED.add(tag)
            on = enabled(tag)
            if logger.level == logging.NOTSET:
                logger.setLevel(logging.DEBUG if on else logging.INFO)
            if on and not logger.handlers:
                logger.addHandler(_StderrUnlessConfigured(logger))
    return logger


for _tag in TAGS:  # every known area is on or off from the start, also before its first line is logged
    vlog(_tag)

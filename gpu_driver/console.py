"""Terminal output of the command-line tools, through one library (rich): progress on stderr, shown
only when stderr is a terminal (a pipe or a log file gets nothing), and tables as plain aligned text —
first column at the line start, a rule under the header, no colours when not on a terminal — so
that what the tools print on stdout stays machine-readable."""
from __future__ import annotations

import contextlib
import io
import sys
from typing import Iterator, Sequence

from rich import box
from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn)
from rich.table import Table
from rich.text import Text

#: width of a table rendered for a file or a pipe (wide enough never to wrap a row)
TEXT_WIDTH = 400


class Reporter:
    """What a long-running job tells the user: ``reporter(message)`` replaces the line's text,
    ``reporter.advance(n)`` moves its bar (when it has a total), ``reporter.step(message)`` starts
    the next step (the bar counts the steps finished)."""

    def __init__(self, progress: Progress | None, task=None):
        self._progress, self._task = progress, task
        self._steps = 0

    def step(self, message: str) -> None:
        self.advance(1 if self._steps else 0, message)
        self._steps += 1

    def __call__(self, message: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=message)

    def advance(self, steps: int = 1, message: str | None = None) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=steps,
                                  **({"description": message} if message is not None else {}))


@contextlib.contextmanager
def progress(total: int | None = None, message: str = "") -> Iterator[Reporter]:
    """A progress line on stderr for the duration of the block — a bar when ``total`` is given, a
    spinner otherwise, with the elapsed time — removed when the block ends; nothing at all when
    stderr is not a terminal."""
    console = Console(file=sys.stderr)
    if not console.is_terminal:
        yield Reporter(None)
        return
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as bar:
        yield Reporter(bar, bar.add_task(message, total=total))


def _table(columns: Sequence[str], rows: Sequence[Sequence[object]], title: str | None,
           text_columns: Sequence[str]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title=title, title_justify="left")
    for k, name in enumerate(columns):
        table.add_column(name, justify="left" if k == 0 or name in text_columns else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))  # Text: cells are data, never markup
    return table


def render_table(columns: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None,
                 text_columns: Sequence[str] = ()) -> str:
    """The table as plain text: one line per row, the first column left-aligned at the line start,
    the others right-aligned (numbers) except ``text_columns`` (left-aligned), a rule under the header."""
    out = io.StringIO()
    Console(file=out, width=TEXT_WIDTH, color_system=None, highlight=False).print(
        _table(columns, rows, title, text_columns))
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").splitlines())


def print_table(columns: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None,
                text_columns: Sequence[str] = ()) -> None:
    """Print the table on stdout: styled on a terminal, :func:`render_table`'s plain text otherwise."""
    console = Console(file=sys.stdout, highlight=False)
    if console.is_terminal:
        console.print(_table(columns, rows, title, text_columns))
    else:
        print(render_table(columns, rows, title, text_columns), flush=True)

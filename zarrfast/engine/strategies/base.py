"""The shape of a strategy: a name, when it applies, and how it runs."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

from zarrfast.engine.plan import Plan

__all__ = ["RowStrategy", "Strategy", "choose_rows"]

logger = logging.getLogger("zarrfast.engine")


class Strategy:
    """One way to read or write a basic selection.  :func:`~zarrfast.engine.strategies.read`
    and :func:`~zarrfast.engine.strategies.write` run the first strategy of their table
    whose :meth:`applies` is true (the last one of each table always applies)."""

    #: the name the ``zarrfast.engine`` log gives
    name: ClassVar[str]
    #: when it applies, in words (the log says it too)
    when: ClassVar[str]
    #: the kernels (``zarrfast.kernels``) it calls
    kernels: ClassVar[tuple[str, ...]] = ()
    #: the chain kinds it reads or writes (the table asks no other strategy)
    kinds: ClassVar[tuple[str, ...]] = ("regular", "sharded", "rectilinear",
                                        "rectilinear-sharded", "object")

    def applies(self, plan: Plan) -> Any:
        """Whether this strategy takes ``plan``: false, or something true that
        :meth:`run` is given back (a count of chunks, say), so nothing is worked out twice."""
        raise NotImplementedError

    def run(self, plan: Plan, fit: Any) -> None:
        """Do the read or the write; ``fit``: what :meth:`applies` returned."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<strategy {self.name}>"


class RowStrategy:
    """One way to fetch (or store) the rows of a projection: the chunks a read or a
    write touches, once the selection strategy has projected the selection onto the
    grid.  ``rows`` is the :class:`~zarrfast.engine.chunked.RowReader` (reads) or
    :class:`~zarrfast.engine.chunked.RowWriter` (writes)."""

    name: ClassVar[str]
    when: ClassVar[str]
    kernels: ClassVar[tuple[str, ...]] = ()

    def applies(self, plan: Plan, rows: Any) -> bool:
        raise NotImplementedError

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<row strategy {self.name}>"


def choose_rows(table: Sequence[RowStrategy], plan: Plan, rows: Any) -> RowStrategy:
    """The first row strategy of ``table`` that applies (the last one always does),
    named in the ``zarrfast.engine`` DEBUG log."""
    for strategy in table:
        if strategy.applies(plan, rows):
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("  rows of %s by %s: %s (%d chunks)", plan.path or "/",
                             strategy.name, strategy.when, rows.proj.nrows)
            return strategy
    raise AssertionError(f"no row strategy applies: {list(table)}")  # pragma: no cover

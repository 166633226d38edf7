"""A gate that holds requests until a number of them are in flight at once.

A fake server that wants to show that a client keeps ``n`` requests in flight cannot
wait a short while per request and count the overlaps: on a loaded machine the
requests may come one after another however long it waits.  Its handlers call
:meth:`InFlightGate.enter` (threads) or ``await`` :meth:`InFlightGate.aenter` (any
event loop, any thread) when a request comes in and :meth:`InFlightGate.leave` when it
is answered.  Once armed with :meth:`InFlightGate.hold`, the gate holds every request
until ``n`` are in flight together, then lets them all go and holds no more: the peak
is then ``n`` at least whatever the load, and a client that never sends ``n`` at once
is seen (the gate lets the held ones go after ``timeout`` seconds, a bound that only
stops a hang, and says so in :attr:`InFlightGate.timed_out`).
"""

from __future__ import annotations

import asyncio
import threading
import time


class InFlightGate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        #: requests being answered now, and the most there were at once
        self.in_flight = 0
        self.peak = 0
        #: whether an armed gate let its requests go on its timeout, not on its count
        self.timed_out = False
        self._n = 0  # how many to wait for, 0: open
        self._timeout = 0.0
        self._generation = 0  # of the arming: a request waits for its own one only

    def hold(self, n: int, timeout: float = 120.0) -> None:
        """Hold the next requests until ``n`` are in flight (once)."""
        with self._cond:
            self._n, self._timeout, self.timed_out = n, timeout, False
            self._generation += 1
            self._open_if_reached()

    def reset(self) -> None:
        """Open the gate and forget the peak."""
        with self._cond:
            self._n = 0
            self._generation += 1
            self.peak = self.in_flight
            self._cond.notify_all()

    def _open_if_reached(self) -> bool:
        if self._n and self.in_flight >= self._n:
            self._n = 0
            self._cond.notify_all()
        return not self._n

    def _come_in(self) -> tuple[int, float]:
        with self._cond:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self._open_if_reached():
                return 0, 0.0
            return self._generation, self._timeout

    def _let_go(self, generation: int) -> None:
        with self._cond:
            if self._generation == generation and self._n:  # (not reached: a timeout)
                self.timed_out = True
                self._n = 0
                self._cond.notify_all()

    def _waiting(self, generation: int) -> bool:
        return self._generation == generation and self._n != 0

    def enter(self) -> None:
        """A request came in (on a thread of its own): wait while the gate holds it."""
        generation, timeout = self._come_in()
        if not generation:
            return
        with self._cond:
            if self._cond.wait_for(lambda: not self._waiting(generation), timeout):
                return
        self._let_go(generation)

    async def aenter(self) -> None:
        """:meth:`enter` for a coroutine: polls, so that requests held on one event loop
        never block it (nor another loop's requests)."""
        generation, timeout = self._come_in()
        if not generation:
            return
        hang = time.monotonic() + timeout  # (only ends a hang)
        while True:
            with self._cond:
                if not self._waiting(generation):
                    return
            if time.monotonic() > hang:
                break
            await asyncio.sleep(0.002)
        self._let_go(generation)

    def leave(self) -> None:
        with self._cond:
            self.in_flight -= 1

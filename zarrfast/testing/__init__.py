"""Helpers for testing zarrfast and third-party extensions of it.

:class:`StoreTests` is a conformance suite for :class:`zarrfast.stores.Store`
implementations; subclass it once per store (see :mod:`zarrfast.testing.store`).
Importing this package needs pytest (and Hypothesis for the property tests).
"""

from .store import StoreTests

__all__ = ["StoreTests"]

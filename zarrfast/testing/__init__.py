"""Helpers for testing zarrfast and third-party extensions of it.

:class:`StoreTests` is a conformance suite for :class:`zarrfast.storage.Store`
implementations; subclass it once per store (see :mod:`zarrfast.testing.store`).
Importing this package needs pytest (and Hypothesis for the property tests).
"""

from zarrfast.testing.store import StoreTests

__all__ = ["StoreTests"]

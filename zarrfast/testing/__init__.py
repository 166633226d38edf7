"""Helpers for testing zarrfast and third-party extensions of it.

[StoreTests][zarrfast.testing.StoreTests] is a conformance suite for
[Store][zarrfast.storage.Store] implementations: subclass it once per store, in a
test module, and pytest runs every one of its tests against that store.  Importing
this package needs pytest (and Hypothesis for the property test).
"""

from zarrfast.testing.store import StoreTests

__all__ = ["StoreTests"]

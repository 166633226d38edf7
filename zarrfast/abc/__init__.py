"""``zarr.abc``: the abstract classes of zarr-python's ``zarr.abc``, as zarrfast's classes.

Libraries built on zarr-python import its abstract store and codec classes
(``from zarr.abc.store import Store``; ome-zarr: ``from zarr.abc.codec import
BytesBytesCodec``) to annotate and to test ``isinstance``.  :mod:`zarrfast.abc.store` and
:mod:`zarrfast.abc.codec` give zarrfast's classes under those paths, so that such code runs
with ``zarr`` installed as zarrfast (:func:`zarrfast.install_as_zarr`); they hold nothing of
their own.  zarrfast's ``Store`` is synchronous (its ``get`` returns bytes, not a
coroutine), so a store class written against zarr-python's coroutine API is not a zarrfast
store.
"""

from zarrfast.abc import codec, store

__all__ = ["codec", "store"]

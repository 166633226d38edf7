"""``zarr.experimental.cache_store``: a cache kept in another store.

``CacheStore(store, cache_store=..., max_age_seconds=..., max_size=...,
cache_set_data=...)`` takes zarr-python's arguments; it is
:class:`zarrfast.storage.store_cache.StoreBackedCache`.
"""

from zarrfast.storage.store_cache import StoreBackedCache as CacheStore

__all__ = ["CacheStore"]

"""zarrfast: a fast, drop-in Zarr v3 implementation for Python.

Replace ``import zarr`` with ``import zarrfast as zarr``::

    import zarrfast
    a = zarrfast.create_array("data.zarr", shape=(1000, 1000), chunks=(100, 100), dtype="f4")
    a[:10, ::2] = 1.0
    print(a[5, :4])
"""


def _import_numcodecs() -> None:
    """Import numcodecs without showing the ``DeprecationWarning`` it gives when it finds
    the ``crc32c`` package (a dependency of zarrfast) but not ``google_crc32c``.

    numcodecs puts a ``once`` filter for that warning first in ``warnings.filters``, so
    neither ``-W error`` nor ``-W ignore`` would reach it: every ``import zarrfast`` printed
    it.  Here the import runs with the warnings recorded and the filters restored after it
    (numcodecs' filter goes too); every other warning of the import is shown again as it
    would have been.  A program that imported numcodecs itself first got the warning from
    its own import: nothing is done then.
    """
    import sys
    import warnings

    if "numcodecs" in sys.modules:
        return
    with warnings.catch_warnings(record=True) as caught:
        import numcodecs  # noqa: F401
    for w in caught:
        if issubclass(w.category, DeprecationWarning) and str(w.message).startswith(
                "crc32c usage is deprecated"):
            continue
        warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


_import_numcodecs()  # first: before any module imports numcodecs

from zarrfast import api, codecs, config, dtype, errors, storage  # noqa: E402
from zarrfast.api import (  # noqa: E402
    array,
    consolidate_metadata,
    create,
    create_array,
    create_group,
    create_hierarchy,
    empty,
    empty_like,
    from_array,
    full,
    full_like,
    group,
    load,
    ones,
    ones_like,
    open,
    open_array,
    open_consolidated,
    open_group,
    open_like,
    save,
    save_array,
    save_group,
    tree,
    zeros,
    zeros_like,
)
from zarrfast.convert import convert  # noqa: E402
from zarrfast.hierarchy.array import Array  # noqa: E402
from zarrfast.hierarchy.asynchronous import AsyncArray, AsyncGroup  # noqa: E402
from zarrfast.hierarchy.group import Group  # noqa: E402
from zarrfast.storage import LocalStore, MemoryStore, Store  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Array",
    "AsyncArray",
    "AsyncGroup",
    "Group",
    "LocalStore",
    "MemoryStore",
    "Store",
    "__version__",
    "api",
    "array",
    "codecs",
    "config",
    "consolidate_metadata",
    "convert",
    "create",
    "create_array",
    "create_group",
    "create_hierarchy",
    "dtype",
    "empty",
    "empty_like",
    "errors",
    "from_array",
    "full",
    "full_like",
    "group",
    "load",
    "ones",
    "ones_like",
    "open",
    "open_array",
    "open_consolidated",
    "open_group",
    "open_like",
    "save",
    "save_array",
    "save_group",
    "storage",
    "tree",
    "zeros",
    "zeros_like",
]

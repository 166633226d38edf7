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
    get_many,
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


def install_as_zarr() -> None:
    """Put zarrfast under the name ``zarr``, for the libraries a program calls.

    As PyMySQL's ``install_as_MySQLdb()`` does for MySQLdb: after it, ``import zarr``
    anywhere in the process (anndata, ome-zarr, spatialdata, dask, xarray...) gives
    zarrfast.  Call it once, at the start of the program, before importing those
    libraries::

        import zarrfast
        zarrfast.install_as_zarr()
        import anndata  # its ``import zarr`` is zarrfast

    ``zarr`` is then a module whose attributes are zarrfast's (``zarr.Array is
    zarrfast.Array``), except ``zarr.__version__``: the zarr-python API version zarrfast
    follows, ``"3.4.2"``, which libraries read to choose features (dask takes a version
    below 3 for zarr-python 2); ``importlib.metadata.version("zarr")`` says the same.
    ``zarrfast.__version__`` stays zarrfast's own.  zarr-python's packages that zarrfast
    provides import under their zarr names (``import zarr.codecs`` gives
    ``zarrfast.codecs``; ``zarr.abc.store``, ``zarr.codecs.zstd``, ``zarr.core.buffer``,
    ``zarr.core.sync``, ``zarr.errors``...); a module zarrfast does not provide raises
    ``ModuleNotFoundError``.  ``zarr.storage`` holds zarrfast's stores, with a
    ``WrapperStore`` that also takes subclasses written for zarr-python's (generic,
    coroutine methods, ``self._store``).  Calling it again does nothing.

    Limits: zarrfast is not zarr-python; where it differs (docs/migrating.md) the
    libraries see the difference.  Its stores are synchronous, so a store class written
    against zarr-python's coroutine API (``async def get``) works only as a
    ``zarr.storage.WrapperStore`` subclass, and zarr-python's internals beyond the
    modules above are not there.  zarr-python need
    not be installed; if it is, it is not used.  It holds for this process: a new Python
    process (a spawned worker, a dask.distributed worker) imports zarr-python unless it
    calls ``install_as_zarr()`` too; a forked one inherits it.

    Raises
    ------
    RuntimeError
        (``zarrfast.core._install.ZarrAlreadyImportedError``) when zarr-python, or one
        of its modules, was imported before: objects of it may exist and modules may
        hold it, so nothing is changed rather than mixing the two.

    Examples
    --------
    >>> import subprocess, sys
    >>> code = ("import zarrfast; zarrfast.install_as_zarr(); import zarr, zarr.storage; "
    ...         "print(zarr.__version__, zarr.Array is zarrfast.Array, zarrfast.__version__)")
    >>> print(subprocess.run([sys.executable, "-c", code], capture_output=True,
    ...                      text=True).stdout.strip())
    3.4.2 True 0.1.0
    """
    from zarrfast.core._install import install

    install()

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
    "get_many",
    "group",
    "install_as_zarr",
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

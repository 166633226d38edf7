"""Runtime configuration: zarr-python's zarr.config, with zarrfast's own keys.

zarrfast.config is a donfig Config, as zarr.config is, and answers the same calls:

    zarrfast.config.set({"array.order": "F"})    # for good
    with zarrfast.config.set(threads=1):         # for the with block only
        ...
    zarrfast.config.get("threads")
    zarrfast.config.reset()     # back to the defaults, the YAML files and the environment
    zarrfast.config.refresh()   # read the environment and the YAML files again
    zarrfast.config.pprint()    # print every key
    zarrfast.config.values()    # a read-only view of every top-level key's value

set() takes a mapping of dotted keys ({"array.order": "F"}) or of namespaces
({"array": {"order": "F"}}), or keyword arguments: zarrfast's flat keys (threads=2), or
"__" for the dot (threading__max_workers=2).  Every key is checked when it is set: an
unknown key raises UnknownConfigKeyError (a KeyError) listing the known ones, a bad value
BadConfigError saying what the key accepts (both are ZarrfastError).

zarrfast's keys: default, environment variable, what it does

threads: the number of CPUs; ZARRFAST_THREADS
    Threads decoding and encoding chunks.  The same setting as zarr-python's
    threading.max_workers.
io_concurrency: 64; ZARRFAST_IO_CONCURRENCY
    How many fetches of a read or write of a remote store the engine runs at once (its
    I/O threads; one fetch may be a batch of many requests).  Also the default request
    limit of two stores: an ObjectStore takes the value when it is made (a later change
    does not reach it), a ZarrPythonStore reads it at each call.  An FsspecStore does not
    read it: its own max_concurrency (default 64) bounds its batched requests (get_many,
    set_many...).  So this key is not one cap on every request to every store.  The same
    setting as zarr-python's async.concurrency.  An ObjectStore's reads have their own
    bound, remote_reads_in_flight.
remote_reads_in_flight: 256; ZARRFAST_REMOTE_READS_IN_FLIGHT
    How many reads (GETs) an ObjectStore made without max_concurrency has in flight at
    once, from every thread (taken when the store is made): the 435 chunks of a gather
    of 1,024 rows go out in two round trips, not seven of 64 (io_concurrency bounds its
    writes).  Each read in flight holds a thread of the request pool.
write_empty_chunks: False; ZARRFAST_WRITE_EMPTY
    Store chunks whose elements all equal the fill value; when False such a chunk is not
    written, and a stored one is deleted.  The same setting as zarr-python's
    array.write_empty_chunks.
shard_coalesce_gap: 65536 (bytes); ZARRFAST_SHARD_COALESCE_GAP
    Inner chunks of a shard closer than this are fetched in one request (a small box of
    a sharded array in a local directory reads each compressed inner chunk it needs with
    its own pread instead).
shard_index_cache: 4096; ZARRFAST_SHARD_INDEX_CACHE
    Shard indexes cached per array.
result_page_cache: 1 GiB (a 16th of the physical memory if less); ZARRFAST_RESULT_PAGE_CACHE
    A read result of 32 MiB or more that goes leaves its pages for the next result of
    the same size, up to this many bytes in all (and so do per-thread scratch buffers
    of 4 MiB or more); the system takes them back under memory pressure.  0: none kept.
vlen_bytes_per_element: 1024; ZARRFAST_VLEN_BYTES_PER_ELEMENT
    A chunk of variable-length elements (strings, bytes, objects) decodes to at most
    this many bytes per element (and 64 MiB at least): the bound against decompression
    bombs.
lock_timeout: 60.0 (seconds); ZARRFAST_LOCK_TIMEOUT
    Longest wait for the lock of a node's metadata (append, resize, attributes) or of a
    shard written in part, before LockTimeoutError; for conditional writes, how long a
    conflicting shard is read again before ConcurrentWriteError.
file_locks: True; ZARRFAST_FILE_LOCKS
    A LocalStore excludes other processes with flock (LockUnavailableError where the
    file system has none); False: the threads of this process only.
remote_store: "auto"; ZARRFAST_REMOTE_STORE
    Which store a remote URL gets: "auto" (an ObjectStore for s3, gs, az and http(s)
    URLs when obstore is installed and the storage options translate, else an
    FsspecStore), "obstore" or "fsspec".

These variables are read at import and by refresh(); boolean ones take 1/0 (or
true/false, yes/no, on/off).  A value that does not parse, or that the key refuses, is a
BadConfigError naming the variable.

zarr-python's keys

threading.max_workers, async.concurrency and array.write_empty_chunks are the same
settings as threads, io_concurrency and write_empty_chunks: setting either name sets
both, and leaving a with block restores both.  zarrfast also follows array.order ("C":
the memory order of arrays opened or created without order=), default_zarr_format (3:
the format written when none is given), json_indent (2: the indentation of metadata
documents) and array.target_shard_size_bytes (None: the shard size shards="auto" aims
at).  zarr-python 3.4's array.read_missing_chunks (True; False: a read touching a chunk
that is not stored raises ChunkNotFoundError), array.rectilinear_chunks (True here,
False in zarr-python; False: rectilinear grids are neither written nor read) and
array.allow_unsafe_pickle_decode (False: Zarr v2 arrays with the pickle codec are not
read) do what they do there.  The others (async.timeout, codec_pipeline.path,
codec_pipeline.batch_size, codec_pipeline.max_workers,
array.sharding_coalesce_max_gap_bytes, array.sharding_coalesce_max_bytes,
codecs.<name>, buffer, ndbuffer) are accepted, checked and kept for code that reads
them.  enable_gpu() is refused: zarrfast reads and writes NumPy arrays in host memory.

The environment and configuration files

Nested keys come from the environment the donfig way (ZARRFAST_ARRAY__ORDER=F).
zarr-python's variables (ZARR_ARRAY__ORDER=F, ZARR_ASYNC__CONCURRENCY=16) are followed
too, ZARRFAST_* winning where both are set; a ZARR_* value zarrfast does not know or
refuses is skipped with a warning.  YAML files are read as donfig reads them, from
/etc/zarrfast, <prefix>/etc/zarrfast and ~/.config/zarrfast (ZARRFAST_CONFIG and
ZARRFAST_ROOT_CONFIG point elsewhere).

The documentation's Configuration page says the same, with examples.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import donfig
from donfig.config_obj import ConfigSet

from zarrfast.errors import ZarrfastError

__all__ = ["BadConfigError", "Config", "UnknownConfigKeyError", "get", "set", "reset",
           "refresh", "pprint", "update", "env_defaults", "config", "defaults", "values"]

_NO_DEFAULT = object()


class BadConfigError(ZarrfastError):
    """A configuration value is not one the key accepts."""


class UnknownConfigKeyError(BadConfigError, KeyError):
    """A configuration key zarrfast does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


# -- value checks ---------------------------------------------------------------------------

def _int(minimum: int, *, none: bool = False) -> Callable[[str, Any], Any]:
    def check(key: str, value: Any) -> Any:
        if value is None and none:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            also = " or None" if none else ""
            raise BadConfigError(f"config {key}={value!r} must be an integer >= {minimum}{also}")
        return value
    return check


def _seconds(*, none: bool) -> Callable[[str, Any], Any]:
    def check(key: str, value: Any) -> Any:
        if value is None and none:
            return None
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0 < value < float("inf")):
            raise BadConfigError(f"config {key}={value!r} must be a finite number > 0 "
                                 f"(seconds){' or None' if none else ''}")
        return float(value)
    return check


def _bool(key: str, value: Any) -> Any:
    if not isinstance(value, bool):
        raise BadConfigError(f"config {key}={value!r} must be a bool")
    return value


def _choice(*choices: Any) -> Callable[[str, Any], Any]:
    def check(key: str, value: Any) -> Any:
        if isinstance(value, bool) or value not in choices:
            raise BadConfigError(f"config {key}={value!r} must be one of {choices}")
        return value
    return check


def _str(key: str, value: Any) -> Any:
    if not isinstance(value, str) or not value:
        raise BadConfigError(f"config {key}={value!r} must be a non-empty string "
                             f"(a dotted class path)")
    return value


#: values of the ``remote_store`` key
REMOTE_STORES = ("auto", "obstore", "fsspec")

#: every key zarrfast knows, with its check (``codecs.<name>`` keys are any class path)
_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "threads": _int(1),
    "write_empty_chunks": _bool,
    "shard_coalesce_gap": _int(0),
    "shard_index_cache": _int(1),
    "result_page_cache": _int(0),
    "io_concurrency": _int(1),
    "remote_reads_in_flight": _int(1),
    "vlen_bytes_per_element": _int(1),
    "lock_timeout": _seconds(none=False),
    "file_locks": _bool,
    "remote_store": _choice(*REMOTE_STORES),
    "default_zarr_format": _choice(2, 3),
    "array.order": _choice("C", "F"),
    "array.write_empty_chunks": _bool,
    "array.target_shard_size_bytes": _int(1, none=True),
    "array.read_missing_chunks": _bool,
    "array.rectilinear_chunks": _bool,
    "array.allow_unsafe_pickle_decode": _bool,
    "array.sharding_coalesce_max_gap_bytes": _int(0),
    "array.sharding_coalesce_max_bytes": _int(0),
    "async.concurrency": _int(1),
    "async.timeout": _seconds(none=True),
    "threading.max_workers": _int(1, none=True),
    "json_indent": _int(0, none=True),
    "codec_pipeline.path": _str,
    "codec_pipeline.batch_size": _int(1),
    "codec_pipeline.max_workers": _int(1, none=True),
    "buffer": _str,
    "ndbuffer": _str,
}

#: zarr-python's key -> the zarrfast key that means the same; both always hold one value
ALIASES = {
    "threading.max_workers": "threads",
    "async.concurrency": "io_concurrency",
    "array.write_empty_chunks": "write_empty_chunks",
}
_ALIASED = {v: k for k, v in ALIASES.items()}

#: the namespaces whose keys are fixed: a key under them that is not in ``_CHECKS`` is a typo
_FIXED_NAMESPACES = ("array", "async", "threading", "codec_pipeline")


# -- the environment --------------------------------------------------------------------------

def _env_parse(name: str, raw: str, key: str) -> Any:
    """Parse zarrfast's own environment variable ``name`` for ``key``."""
    raw = raw.strip()
    check = _CHECKS[key]
    if check is _bool:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise BadConfigError(f"environment variable {name}={raw!r} is not a boolean (use 1/0)")
    if key == "remote_store":
        value: Any = raw.lower()
    elif key == "lock_timeout":
        try:
            value = float(raw)
        except ValueError:
            raise BadConfigError(f"environment variable {name}={raw!r} is not a number") from None
    else:
        try:
            value = int(raw)
        except ValueError:
            raise BadConfigError(
                f"environment variable {name}={raw!r} is not an integer") from None
    try:
        return check(key, value)
    except BadConfigError as e:
        raise BadConfigError(f"environment variable {name}={raw!r}: {e}") from None


#: zarrfast's environment variables (read with zarrfast's checks, not donfig's literal_eval)
_ENV_KEYS = {
    "ZARRFAST_THREADS": "threads",
    "ZARRFAST_WRITE_EMPTY": "write_empty_chunks",
    "ZARRFAST_SHARD_COALESCE_GAP": "shard_coalesce_gap",
    "ZARRFAST_SHARD_INDEX_CACHE": "shard_index_cache",
    "ZARRFAST_RESULT_PAGE_CACHE": "result_page_cache",
    "ZARRFAST_IO_CONCURRENCY": "io_concurrency",
    "ZARRFAST_REMOTE_READS_IN_FLIGHT": "remote_reads_in_flight",
    "ZARRFAST_VLEN_BYTES_PER_ELEMENT": "vlen_bytes_per_element",
    "ZARRFAST_LOCK_TIMEOUT": "lock_timeout",
    "ZARRFAST_FILE_LOCKS": "file_locks",
    "ZARRFAST_REMOTE_STORE": "remote_store",
}
#: donfig's own variables: where to find YAML files, not configuration values
_ENV_NOT_VALUES = ("ZARRFAST_CONFIG", "ZARRFAST_ROOT_CONFIG")


def _donfig_variable(name: str) -> bool:
    """Whether the environment variable ``name`` is one donfig reads as a value: a nested
    key (``ZARRFAST_ARRAY__ORDER``) or a flat zarr-python key (``ZARRFAST_JSON_INDENT``).
    zarrfast's own (``ZARRFAST_THREADS``...) are read with their checks, and the other
    ``ZARRFAST_*`` switches (``ZARRFAST_PURE_PYTHON``...) are not configuration keys."""
    if not name.startswith("ZARRFAST_") or name in _ENV_KEYS or name in _ENV_NOT_VALUES:
        return False
    key = name[len("ZARRFAST_"):].lower()
    return "__" in key or key in _CHECKS


def _zarr_python_environment(env: Mapping[str, str]) -> dict[str, Any]:
    """zarr-python's ``ZARR_*`` variables (``ZARR_ARRAY__ORDER=F``), flat and checked: a
    drop-in replacement follows them (``ZARRFAST_*`` wins where both say).  What zarrfast
    does not know or refuses is left out with a warning, not an error: the variables are
    zarr-python's, and may be for a version with other keys."""
    chosen = {k: v for k, v in env.items() if k.startswith("ZARR_")
              and k not in ("ZARR_CONFIG", "ZARR_ROOT_CONFIG")
              and _donfig_variable("ZARRFAST_" + k[len("ZARR_"):])}
    if not chosen:
        return {}
    flat: dict[str, Any] = {}
    for key, value in donfig.config_obj.collect_env("ZARR_", env=chosen).items():
        _flatten(key, value, flat)
    out = {}
    for key, value in flat.items():
        try:
            _check(key, value)
        except BadConfigError as e:
            warnings.warn(f"zarrfast ignores zarr-python's setting {key}={value!r} from the "
                          f"environment: {e}", UserWarning, stacklevel=3)
            continue
        out[key] = value
    return out


def env_defaults(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """zarrfast's flat keys as the environment ``env`` (``os.environ``) sets them."""
    env = os.environ if env is None else env
    return {key: _env_parse(name, env[name], key) for name, key in _ENV_KEYS.items()
            if env.get(name, "").strip()}


def _result_page_cache() -> int:
    """The default of ``result_page_cache``: 1 GiB, or a sixteenth of the physical
    memory where that is less."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # (not POSIX: no PageBuffer either)
        physical = 16 * 2**30
    return max(0, min(2**30, physical // 16))


def _defaults() -> dict[str, Any]:
    threads = os.cpu_count() or 1
    return {
        # zarrfast's keys
        "threads": threads,
        "write_empty_chunks": False,
        "shard_coalesce_gap": 64 * 1024,
        "shard_index_cache": 4096,
        "result_page_cache": _result_page_cache(),
        "io_concurrency": 64,
        "remote_reads_in_flight": 256,
        "vlen_bytes_per_element": 1024,
        "lock_timeout": 60.0,
        "file_locks": True,
        "remote_store": "auto",
        # zarr-python's keys
        "default_zarr_format": 3,
        "array": {"order": "C", "write_empty_chunks": False,
                  "target_shard_size_bytes": None, "read_missing_chunks": True,
                  # zarr-python's default is False (it refuses rectilinear grids unless
                  # told); zarrfast has read and written them from the start
                  "rectilinear_chunks": True,
                  "sharding_coalesce_max_gap_bytes": 1 << 20,
                  "sharding_coalesce_max_bytes": 16 << 20,
                  # decoding pickles can run code: only where this says so (and numcodecs'
                  # own switch), as in zarr-python 3.4
                  "allow_unsafe_pickle_decode": False},
        "async": {"concurrency": 64, "timeout": None},
        "threading": {"max_workers": threads},
        "json_indent": 2,
        "codec_pipeline": {"path": "zarrfast.codecs.CodecChain", "batch_size": 1,
                           "max_workers": None},
        "codecs": {},
        # what zarrfast hands around: bytes from stores, NumPy arrays to users (kept for
        # code that reads these keys; zarrfast has no pluggable buffer classes)
        "buffer": "builtins.bytes",
        "ndbuffer": "numpy.ndarray",
    }


# -- key handling ----------------------------------------------------------------------------

def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """``{"array": {"order": "F"}}`` -> ``{"array.order": "F"}`` for the namespaces whose
    keys are known (a dict for another key is a value and stays whole)."""
    if isinstance(value, Mapping) and (prefix in _FIXED_NAMESPACES or prefix == "codecs"):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = value


def _check(key: str, value: Any) -> Any:
    """The checked value of ``key``; unknown keys raise ``UnknownConfigKeyError``."""
    key = key.replace("-", "_")
    check = _CHECKS.get(key)
    if check is not None:
        return check(key, value)
    head, dot, tail = key.partition(".")
    if head == "codecs" and dot and tail:
        return _str(key, value)
    if not dot or head in _FIXED_NAMESPACES or head in _CHECKS:
        known = sorted(k for k in _CHECKS if k.partition(".")[0] == head) if dot \
            else sorted(k for k in _CHECKS if "." not in k) + sorted(
                {k.partition(".")[0] for k in _CHECKS if "." in k} | {"codecs"})
        raise UnknownConfigKeyError(f"unknown config key {key!r}; known keys: {known}")
    return value  # another library's namespace: donfig keeps what it is given


def _normalise(flat: Mapping[str, Any], env_threads: int, *, strict: bool = True
               ) -> dict[str, Any]:
    """Check every key of ``flat`` and give the aliased keys of each pair one value (both
    keys of a pair with different values: an error when ``strict``, else the later wins)."""
    out: dict[str, Any] = {}
    given: dict[str, Any] = {}  # the checked values of the keys in ``flat``
    for key, value in flat.items():
        key = key.replace("-", "_")
        value = _check(key, value)
        if key == "threading.max_workers" and value is None:
            value = env_threads  # zarr-python's "the default" is zarrfast's default count
        other = ALIASES.get(key) or _ALIASED.get(key)
        if strict and other is not None and other in given and given[other] != value:
            raise BadConfigError(f"config {key}={value!r} and {other}={given[other]!r} are "
                                 f"one setting: give one of them")
        out[key] = value
        if other is not None:
            out[other] = value
        given[key] = value
    return out


class Config(donfig.Config):
    """A ``donfig.Config`` whose keys are checked and whose aliased keys stay equal.

    ``get`` of a top-level key is one dictionary lookup (it is on the hot paths); the
    dictionary ``self.config`` is one object for the life of the ``Config`` (``update``,
    ``merge`` and ``expand_environment_variables`` change it in place), so the module-level
    ``get`` can hold it."""

    def __init__(self) -> None:
        super().__init__("zarrfast", defaults=[_defaults()])

    # -- reading ------------------------------------------------------------------------
    def get(self, key: str, default: Any = _NO_DEFAULT) -> Any:
        try:
            return self.config[key]
        except (KeyError, TypeError):
            pass
        try:
            return super().get(key)
        except (KeyError, TypeError, IndexError):
            if default is not _NO_DEFAULT:
                return default
        raise UnknownConfigKeyError(
            f"unknown config key {key!r}; set keys: {sorted(self.config)}") from None

    def collect(self, paths: list[str] | None = None,
                env: Mapping[str, str] | None = None) -> dict:
        env = self.env if env is None else env
        flat = _zarr_python_environment(env)
        rest = {k: v for k, v in env.items() if _donfig_variable(k)}
        collected = super().collect(paths=paths, env=rest)
        for key, value in collected.items():
            _flatten(key, value, flat)
        flat.update(env_defaults(env))
        threads = flat.get("threads", _defaults()["threads"])
        merged: dict[str, Any] = {}
        ConfigSet(merged, _NullLock(), {}, _normalise(flat, threads, strict=False))
        return merged

    def refresh(self, **kwargs: Any) -> None:
        live = self.config
        super().refresh(**kwargs)  # clears, applies the defaults and what collect finds
        if self.config is not live:  # keep the one dictionary (see the class docstring)
            live.clear()
            live.update(self.config)
            self.config = live

    def reset(self) -> None:
        """Forget every value set; back to the defaults, YAML files and environment."""
        self.clear()
        self.refresh()

    def enable_gpu(self) -> ConfigSet:
        """zarr-python's switch to GPU buffers: zarrfast has none, so this refuses."""
        raise BadConfigError("zarrfast has no GPU buffers: enable_gpu() is zarr-python's "
                             "(with cupy); zarrfast reads and writes NumPy arrays in host "
                             "memory")

    # -- writing ------------------------------------------------------------------------
    def set(self, arg: Mapping[str, Any] | None = None, **kwargs: Any) -> ConfigSet:
        """Set values for good, or for a ``with`` block (the return value restores them).

        ``arg`` maps dotted keys (``{"array.order": "F"}``) or namespaces
        (``{"array": {"order": "F"}}``) to values; keyword arguments take ``__`` for the dot
        (``threading__max_workers=2``) or zarrfast's flat keys (``threads=2``)."""
        if arg is not None and not isinstance(arg, Mapping):
            raise BadConfigError(f"config.set takes a mapping of keys to values, got {arg!r}")
        flat: dict[str, Any] = {}
        for key, value in (arg or {}).items():
            if not isinstance(key, str):
                raise BadConfigError(f"config key {key!r} is not a string")
            _flatten(key, value, flat)
        for key, value in kwargs.items():
            _flatten(key.replace("__", "."), value, flat)
        checked = _normalise(flat, env_defaults().get("threads", _defaults()["threads"]))
        return super().set(checked)

    def update(self, new: Mapping, priority: str = "new") -> None:
        flat: dict[str, Any] = {}
        for key, value in new.items():
            _flatten(key, value, flat)
        checked = _normalise(flat, _defaults()["threads"])
        nested: dict[str, Any] = {}
        ConfigSet(nested, _NullLock(), {}, checked)
        result = donfig.config_obj.update(dict(self.config), nested, priority=priority)
        self.config.clear()
        self.config.update(result)

    def merge(self, *dicts: Mapping) -> None:
        result = donfig.config_obj.merge(dict(self.config), *dicts)
        self.config.clear()
        self.config.update(result)

    def expand_environment_variables(self) -> None:
        result = donfig.config_obj.expand_environment_variables(self.config)
        self.config.clear()
        self.config.update(result)


class _NullLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


#: the one configuration object (``zarrfast.config`` forwards to it)
_config = Config()
_values = _config.config


def get(key: str, default: Any = _NO_DEFAULT) -> Any:
    """Return the value of ``key`` (a zarrfast key, or a dotted zarr-python key)."""
    try:
        return _values[key]  # the hot path: one lookup
    except KeyError:
        return _config.get(key, default)


def values() -> Mapping[str, Any]:
    """The configuration as it is now: a read-only view of every key's value (one call
    for code that reads several keys at once, such as the engine at the start of a read)."""
    return _view


_view: Mapping[str, Any] = MappingProxyType(_values)

set = _config.set  # noqa: A001
reset = _config.reset
refresh = _config.refresh
pprint = _config.pprint
update = _config.update
update_defaults = _config.update_defaults
to_dict = _config.to_dict
clear = _config.clear
collect = _config.collect
merge = _config.merge
expand_environment_variables = _config.expand_environment_variables
rename = _config.rename
serialize = _config.serialize
ensure_file = _config.ensure_file
enable_gpu = _config.enable_gpu


def items() -> Iterator[tuple[str, Any]]:
    """The top-level keys and values (a snapshot)."""
    return iter(dict(_values).items())


# donfig's attributes, for code written against ``zarr.config`` (no module ``__getattr__``:
# it would slow every attribute lookup on this module, ``get`` included, by half)
config = _config.config  # the nested dictionary itself (one object for good, see Config)
defaults = _config.defaults
name = _config.name
paths = _config.paths
env_prefix = _config.env_prefix
deprecations = _config.deprecations
config_lock = _config.config_lock

"""The files of a directory tree (or one file) with their bytes, to show that a command
left them exactly as they were; the files zarrfast writes for an array of given values."""

from __future__ import annotations

import os


def file_bytes(root: str | os.PathLike) -> dict[str, bytes]:
    """Every file below ``root`` by its path relative to ``root``, with its bytes (a
    file ``root`` itself: under ``""``)."""
    if os.path.isfile(root):
        with open(root, "rb") as fh:
            return {"": fh.read()}
    out = {}
    for dp, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(dp, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def written_files(data, **create_kw) -> dict[str, bytes]:
    """The keys and bytes zarrfast writes for an array holding ``data`` (made in a
    ``MemoryStore`` with ``create_array(shape=data.shape, dtype=data.dtype,
    **create_kw)``), for a test server to serve."""
    import zarrfast
    from zarrfast.storage import MemoryStore

    mem = MemoryStore()
    a = zarrfast.create_array(mem, shape=data.shape, dtype=data.dtype, **create_kw)
    a[...] = data
    return {k: bytes(mem.get(k)) for k in mem.list()}


def relative_files(root: str | os.PathLike) -> list[str]:
    """The paths of the files below ``root``, relative to it, sorted."""
    out = []
    for dirpath, _, files in os.walk(root):
        out += [os.path.relpath(os.path.join(dirpath, f), root) for f in files]
    return sorted(out)


def temporaries(root: str | os.PathLike) -> list[str]:
    """The temporary files zarrfast's writes left below ``root`` (none, after a write
    that ended, whether it failed or not)."""
    return [f for f in relative_files(root) if ".zarrfast-tmp-" in f]

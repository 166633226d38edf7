"""The files of a directory tree (or one file) with their bytes, to show that a command
left them exactly as they were."""

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

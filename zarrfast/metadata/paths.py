"""Node paths and names (zarr-specs ``docs/v3/core/index.rst``, "Node names")."""

from __future__ import annotations

from zarrfast.errors import InvalidNodeNameError

__all__ = ["join_path", "normalize_path", "validate_node_name", "metadata_key"]


def validate_node_name(name: str, *, path: str | None = None, reserved_ok: bool = False
                       ) -> str:
    """Check one node name: non-empty, no ``/``, not only periods, no ``__`` prefix,
    not ``zarr.json``.  ``reserved_ok`` accepts the ``__`` prefix the spec reserves: for
    reading what other writers made (xarray stores a variable named ``None`` as
    ``__values__``), never for creating."""
    if (type(name) is str and name.strip(".") and "/" not in name and "\\" not in name
            and "\x00" not in name and name != "zarr.json"
            and (reserved_ok or not name.startswith("__"))):
        return name  # (a valid name: what is checked below, in one test)
    where = f" in path {path!r}" if path is not None and path != name else ""
    if not isinstance(name, str):
        raise InvalidNodeNameError(f"node name must be a str, got {name!r}{where}")
    if name == "":
        raise InvalidNodeNameError(f"node name must not be empty{where}")
    if "/" in name:
        raise InvalidNodeNameError(f"node name {name!r} must not contain '/'{where}")
    if set(name) == {"."}:
        raise InvalidNodeNameError(f"node name {name!r} must not consist only of periods{where}")
    if name.startswith("__") and not reserved_ok:
        raise InvalidNodeNameError(f"node name {name!r} must not start with '__'{where}")
    if name == "zarr.json":
        raise InvalidNodeNameError(f"node name must not be 'zarr.json'{where}")
    if "\\" in name or "\x00" in name:
        raise InvalidNodeNameError(
            f"node name {name!r} must not contain a backslash or NUL character{where}"
        )
    return name


def normalize_path(path: str | None) -> str:
    """``"/a/b/"`` -> ``"a/b"``; ``None``/``""``/``"/"`` -> ``""`` (the root).  Each name is
    validated."""
    if path is None:
        return ""
    if not isinstance(path, str):
        raise InvalidNodeNameError(f"node path must be a str, got {path!r}")
    names = [n for n in path.split("/") if n != ""]  # "a//b/" -> "a/b", as zarr-python does
    for name in names:
        validate_node_name(name, path=path)
    return "/".join(names)


def join_path(parent: str, name: str) -> str:
    if type(name) is str and name and "/" not in name:  # one name (a member's, listed)
        validate_node_name(name, path=name)
        return f"{parent}/{name}" if parent else name
    child = normalize_path(name)
    if not parent:
        return child
    return f"{parent}/{child}" if child else parent


def metadata_key(path: str) -> str:
    return f"{path}/zarr.json" if path else "zarr.json"

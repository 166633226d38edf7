"""Every compiled module in ``zarrfast._ext`` has a ``.pyi`` stub naming exactly its
public names, and every public kernel has a pure-NumPy twin in ``zarrfast.kernels``
that its docstring (or its module's) names on a "Twin:" / "Twins:" line, and that
exists.  The two kernels whose twins were missing are compared with them here."""

from __future__ import annotations

import ast
import importlib
import re
import types
from pathlib import Path

import numpy as np
import pytest

import zarrfast._ext

from _helpers.decode import needs_blosc

EXT_DIR = Path(zarrfast._ext.__file__).parent
#: the compiled modules: every extension module built into zarrfast/_ext
COMPILED = sorted({p.name.partition(".")[0] for p in EXT_DIR.iterdir()
                   if p.suffix in (".so", ".pyd")})

#: public callables that are no kernel, so have no twin: why
NO_TWIN = {
    "_decode": {
        # binding the codec libraries' C functions (addresses found by zarrfast.kernels)
        "bind_zstd": "binds a library", "bind_blosc": "binds a library",
        "bind_lz4_compress": "binds a library", "bind_lz4_decompress": "binds a library",
        "bind_libdeflate": "binds a library", "bind_zlib_inflate": "binds a library",
        "set_inflate": "chooses a library", "inflate_with": "reports the bindings",
        "use_linked_lz4": "chooses a library", "linked_zstd": "reports the build",
        "linked_blosc": "reports the build", "linked_lz4": "reports the build",
        "bound": "reports the bindings", "blosc_partial_bound": "reports the bindings",
        "blosc_compress_bound": "reports the bindings",
        # configuration and counters (tests, benchmarks)
        "stream_threshold": "a setting (how bytes are stored, not which)",
        "set_blosc_frames": "a setting (which code decodes, not what)",
        "blosc_frames": "reports a setting", "blosc_encoder": "reports a setting",
        "helper_jobs": "counts the helper threads' work",
        "helper_threads": "counts the helper threads",
        "cold_announcements": "counts the calls that announced cold files",
    },
    "_encode": {
        "bind_zlib": "binds a library", "bind_zstd": "binds a library",
        "linked_zstd": "reports the build", "bound": "reports the bindings",
    },
    "_zstd_prefix": {
        "bind": "binds a library", "bound": "reports the binding",
        "Context": "a decompression context (zstd's memory, one per thread)",
    },
    "_fileio": {
        "PageBuffer": "memory from the system (zarrfast.kernels.buffers falls back to NumPy)",
        "kept_pages": "reports PageBuffer's cache", "release_kept_pages": "empties it",
        "use_openat2": "a setting (which system call opens, not what)",
        "use_renameat2": "a setting (which system call renames, not what)",
    },
}

TWIN = re.compile(r"``(zarrfast\.kernels\.[\w.]+)``")


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(f"zarrfast._ext.{name}")


def public_names(mod: types.ModuleType) -> set[str]:
    """The names a compiled module offers: not private, not a module it imports."""
    return {n for n, v in vars(mod).items()
            if not n.startswith("_") and not isinstance(v, types.ModuleType)}


def twin_lines(doc: str | None) -> list[str]:
    """The dotted names on a docstring's "Twin:" / "Twins:" paragraph."""
    if not doc:
        return []
    found = []
    for para in re.split(r"\n\s*\n", doc):
        if re.match(r"\s*Twins?:", para):
            found += TWIN.findall(para)
    return found


def resolve(dotted: str):
    """The object a dotted name names (a module's attribute), or None."""
    module, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None


def stub_names(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    """The top-level names a ``.pyi`` declares, and each class's members."""
    names: set[str] = set()
    members: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.ClassDef):
            members[node.name] = {
                b.name if isinstance(b, ast.FunctionDef) else b.target.id
                for b in node.body
                if isinstance(b, ast.FunctionDef)
                or (isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name))}
    return names, members


def test_the_compiled_modules_are_found():
    assert {"_assemble", "_decode", "_indexing", "_shard_index"} <= set(COMPILED)


@pytest.mark.parametrize("name", COMPILED)
def test_every_public_name_is_in_the_stub_and_every_stub_name_in_the_module(name):
    mod = _module(name)
    stub = EXT_DIR / f"{name}.pyi"
    assert stub.is_file(), f"zarrfast._ext.{name} has no stub {stub.name}"
    declared, members = stub_names(stub)
    have = public_names(mod)
    assert have - declared == set(), f"{stub.name} lacks {sorted(have - declared)}"
    assert declared - have == set(), f"{stub.name} declares {sorted(declared - have)}, " \
                                     f"which zarrfast._ext.{name} does not have"
    for cls, names in members.items():
        # (dunders are protocols: __buffer__ is Python 3.12's name for a buffer)
        missing = {m for m in names
                   if not m.startswith("__") and not hasattr(getattr(mod, cls), m)}
        assert not missing, f"{stub.name}: {cls} has no {sorted(missing)}"


@pytest.mark.parametrize("name", COMPILED)
def test_every_public_kernel_names_a_twin_that_exists(name):
    mod = _module(name)
    module_twins = twin_lines(mod.__doc__)
    skip = NO_TWIN.get(name, {})
    missing = []
    for kernel in sorted(public_names(mod) - set(skip)):
        obj = getattr(mod, kernel)
        if not callable(obj):
            continue  # (constants)
        named = [t for t in twin_lines(obj.__doc__) + module_twins
                 if t.rpartition(".")[2] == kernel]
        if not named:
            missing.append(f"{kernel}: no Twin line names it")
        elif not callable(resolve(named[0])):
            missing.append(f"{kernel}: its twin {named[0]} does not exist")
    assert not missing, f"zarrfast._ext.{name}: " + "; ".join(missing)


@pytest.mark.parametrize("name", sorted(NO_TWIN))
def test_the_names_without_a_twin_exist(name):
    """(so that the list above is kept up to date)"""
    if name not in COMPILED:
        pytest.skip(f"zarrfast._ext.{name} is not built here")
    assert set(NO_TWIN[name]) <= public_names(_module(name))


# -- the twins added with these tests ------------------------------------------------

@needs_blosc
@pytest.mark.parametrize("cname", [b"lz4", b"zstd", b"blosclz"])
@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_blosc_compress_is_its_twin(cname, shuffle):
    from zarrfast._ext import _decode
    from zarrfast.kernels import reference as ref

    if not _decode.blosc_compress_bound():
        pytest.skip("no c-blosc bound for compression")
    rng = np.random.default_rng(shuffle)
    for nbytes, typesize in ((1, 1), (4096, 4), (100_000, 8), (65_536, 2)):
        src = (rng.integers(0, 16, nbytes, dtype=np.uint8) if nbytes > 1
               else np.zeros(1, np.uint8))
        want = ref.blosc_compress(src, 5, shuffle, typesize, cname, 0)
        assert bytes(_decode.blosc_compress(src, 5, shuffle, typesize, cname, 0)) == want
    for bad in ((10, 0, 1), (5, 3, 1), (5, 0, 0)):
        for fn in (ref.blosc_compress, _decode.blosc_compress):
            with pytest.raises(ValueError, match="bad settings"):
                fn(np.zeros(8, np.uint8), *bad, cname, 0)


@needs_blosc
def test_blosc_decode_frame_is_its_twin():
    import numcodecs

    from zarrfast._ext import _decode
    from zarrfast.kernels import reference as ref

    data = np.arange(20_000, dtype="<u4").tobytes()
    for cname in ("lz4", "zstd"):
        for shuffle in (0, 1, 2):
            frame = np.frombuffer(numcodecs.Blosc(cname, 5, shuffle).encode(data), np.uint8)
            got, want = np.zeros(len(data), np.uint8), np.zeros(len(data), np.uint8)
            assert ref.blosc_decode_frame(frame, want) == len(data)
            n = _decode.blosc_decode_frame(frame, got)
            if n == -1:  # left to c-blosc: the kernel wrote nothing of it
                continue
            assert n == len(data) and got.tobytes() == want.tobytes() == data
    for fn in (ref.blosc_decode_frame, _decode.blosc_decode_frame):
        with pytest.raises(ValueError, match="not a blosc frame of 8 bytes"):
            fn(frame, np.zeros(8, np.uint8))

"""Coverage-guided byte fuzzing of the metadata parsers with atheris (not a pytest test).

Run::

    python3 tests/fuzz/atheris_metadata.py --seconds 60      # default 60 s
    python3 tests/fuzz/atheris_metadata.py --seconds 300 -- -max_len=4096

Each input is split into a selector byte and a document; the document goes to the
Zarr v3 parser (``zarr.json``, consolidated metadata included, and through
``zarrfast.open`` on a ``MemoryStore``), the Zarr v2 parsers (``.zarray``,
``.zgroup``, ``.zattrs``, ``.zmetadata``) or the draft parsers (entry point,
array and group documents).  Any exception other than a
:class:`zarrfast.errors.ZarrfastError` is a finding: atheris stops, prints the
traceback and writes the input to ``crash-<sha1>``.  The corpus is seeded with
valid documents from ``tests/fixtures`` and ``tests/_helpers/fuzz_metadata.py``.

The file name does not start with ``test_``: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("ZARRFAST_THREADS", "1")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))  # tests/: the _helpers package

import atheris  # noqa: E402

with atheris.instrument_imports(include=["zarrfast"]):
    import zarrfast  # noqa: E402
    from zarrfast.errors import ZarrfastError  # noqa: E402
    from zarrfast.hierarchy.consolidated import read_consolidated  # noqa: E402
    from zarrfast.metadata.draft import (
        DRAFT_2022,
        ZARRITA,
        convert_array_document,
        convert_group_document,
        parse_entry_point,
    )
    from zarrfast.metadata.v2 import ArrayMetadataV2, GroupMetadataV2  # noqa: E402
    from zarrfast.metadata.v3 import _load_json, parse_metadata  # noqa: E402
    from zarrfast.storage import MemoryStore  # noqa: E402

warnings.simplefilter("ignore")

DRAFT_ENTRY = {
    DRAFT_2022: b'{"zarr_format": "https://purl.org/zarr/spec/core/3.0", '
                b'"metadata_encoding": {"type": "json"}}',
    ZARRITA: b'{"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0", '
             b'"metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0"}',
}
COUNT = {"n": 0, "ok": 0}


def _read_small(node: object) -> None:
    if isinstance(node, zarrfast.Array):
        node[tuple(slice(0, 2) for _ in node.shape)]
    elif isinstance(node, zarrfast.Group):
        for _name, child in node.members(max_depth=None):
            _read_small(child)


def _target(which: int, doc: bytes) -> None:
    if which == 0:
        parse_metadata(doc, path="a/b", key="a/b/zarr.json")
    elif which == 1:
        s = MemoryStore()
        s.set("a/zarr.json", doc)
        _read_small(zarrfast.open(s, path="a", mode="r"))
    elif which == 2:
        s = MemoryStore()
        s.set("zarr.json", doc)
        found = read_consolidated(s, "", 3)
        if found is not None:
            _read_small(zarrfast.open_group(s, mode="r"))
    elif which == 3:
        md = ArrayMetadataV2.from_documents(doc, None, path="a", key="a/.zarray")
        s = MemoryStore()
        s.set("a/.zarray", doc)
        _read_small(zarrfast.open_array(s, path="a", mode="r", zarr_format=2))
        del md
    elif which == 4:
        GroupMetadataV2.from_documents(b'{"zarr_format": 2}', doc, path="a", key="a/.zgroup")
        GroupMetadataV2.from_documents(doc, None, path="a", key="a/.zgroup")
    elif which == 5:
        s = MemoryStore()
        s.set(".zgroup", b'{"zarr_format": 2}')
        s.set(".zmetadata", doc)
        _read_small(zarrfast.open_group(s, mode="r"))
    elif which == 6:
        parse_entry_point(doc)
    elif which in (7, 8):
        layout = DRAFT_2022 if which == 7 else ZARRITA
        parsed = _load_json(doc, "x.array.json")
        convert_array_document(parsed, layout=layout, key="x.array.json")
        s = MemoryStore()
        s.set("zarr.json", DRAFT_ENTRY[layout])
        meta = "meta" if layout == DRAFT_2022 else "meta/root"
        s.set(f"{meta}/x.array.json", doc)
        _read_small(zarrfast.open(s, path="x", mode="r"))
    else:
        parsed = _load_json(doc, "g.group.json")
        convert_group_document(parsed, layout=DRAFT_2022, key="g.group.json")


N_TARGETS = 10


def test_one_input(data: bytes) -> None:
    COUNT["n"] += 1
    if not data:
        return
    which, doc = data[0] % N_TARGETS, data[1:]
    try:
        _target(which, doc)
        COUNT["ok"] += 1
    except ZarrfastError:
        pass


def _seeds() -> list[bytes]:
    """Valid documents to start from, each under every selector that fits it."""
    docs: list[tuple[int, bytes]] = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*")):
        if not path.is_file() or path.stat().st_size > 20_000:
            continue
        name = path.name
        raw = path.read_bytes()
        if name == "zarr.json":
            docs += [(0, raw), (1, raw), (2, raw), (6, raw)]
        elif name in (".zarray",):
            docs.append((3, raw))
        elif name in (".zgroup", ".zattrs"):
            docs.append((4, raw))
        elif name == ".zmetadata":
            docs.append((5, raw))
        elif name.endswith(".array.json"):
            docs += [(7, raw), (8, raw)]
        elif name.endswith(".group.json"):
            docs.append((9, raw))
    try:
        import _helpers.fuzz_metadata as t

        for d in t.V3_ARRAYS:
            docs += [(0, t.dump_doc(d)), (1, t.dump_doc(d))]
        docs.append((2, t.dump_doc({**t.V3_GROUP})))
        docs += [(3, t.dump_doc(d)) for d in t.V2_ARRAYS]
        docs.append((5, t.dump_doc(t.V2_ZMETADATA)))
        for layout, d in t.DRAFT_ARRAYS:
            docs.append((7 if layout == DRAFT_2022 else 8, t.dump_doc(d)))
        docs += [(6, t.dump_doc(e)) for e in t.DRAFT_ENTRY.values()]
    except Exception as e:  # noqa: BLE001 - seeds are a convenience
        print(f"(no seeds from _helpers.fuzz_metadata: {e})")
    return [bytes([which]) + json.dumps(json.loads(raw)).encode()
            if raw.strip().startswith((b"{", b"[")) else bytes([which]) + raw
            for which, raw in docs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="time budget (default 60)")
    parser.add_argument("--corpus", default=None, help="corpus directory (default: temporary)")
    args, rest = parser.parse_known_args()
    corpus = Path(args.corpus or tempfile.mkdtemp(prefix="zarrfast-atheris-"))
    corpus.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(_seeds()):
        (corpus / f"seed-{i:04d}").write_bytes(seed)
    start = time.time()
    argv = [sys.argv[0], f"-max_total_time={args.seconds}", "-max_len=8192",
            "-rss_limit_mb=4096", "-timeout=20",
            f"-artifact_prefix={corpus.parent / (corpus.name + '-crash-')}",
            *[a for a in rest if a != "--"], str(corpus)]
    print(f"atheris: {args.seconds} s, corpus {corpus}", flush=True)
    import atexit

    def report() -> None:
        print(f"atheris: {COUNT['n']} executions ({COUNT['ok']} accepted documents) in "
              f"{time.time() - start:.0f} s", flush=True)

    atexit.register(report)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""What a new user sees from ``zarrfast bench``: no warnings from the peers' imports, every
missing peer named once with the way to add them, the sizes it writes, zarrfast next to
zarr-python in every operation of ``--quick``, a plain summary computed from the table,
and a ``--help`` that speaks to users.  Real runs in child processes, on tiny sizes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from zarrfast.bench import BenchConfig, parse_size
from zarrfast.bench import data as D
from zarrfast.bench import harness as H
from zarrfast.bench import libs as L
from zarrfast.bench.report import summary

PEERS = [n for n in L.LIBRARIES if n != "zarrfast"]
TINY = ["--size", "256KiB", "--layouts", "raw", "--ops", "read", "--threads", "1",
        "--repeat", "1"]


#: makes the modules named in HIDE unimportable and drops their entry points, as if
#: their distributions were not installed (zarr-python loads the codec pipeline that
#: zarrs registers as an entry point: a module hidden alone breaks zarr-python itself)
_HIDE = """
import importlib.metadata as _md
import sys
HIDE = __HIDE__
sys.modules.update(dict.fromkeys(HIDE))
def _visible(**kwargs):
    every = {(e.name, e.group, e.value): e for d in _md.distributions() for e in d.entry_points}
    kept = _md.EntryPoints(e for e in every.values()
                           if e.value.split(":")[0].split(".")[0] not in HIDE)
    return kept.select(**kwargs) if kwargs else kept
_md.entry_points = _visible
"""


def _bench(cwd, *args, hide=(), pre="", warnings="default"):
    """``zarrfast bench *args`` in a child Python (with ``-W warnings``), the modules in
    ``hide`` made unimportable first, as if not installed."""
    code = (_HIDE.replace("__HIDE__", repr(list(hide))) + f"\n{pre}\n"
            f"from zarrfast.cli import main\nsys.exit(main(['bench', *{list(args)!r}]))\n")
    return subprocess.run([sys.executable, "-W", warnings, "-c", code], capture_output=True,
                          text=True, cwd=cwd, timeout=300, check=False)


# -- 1. no warnings from a peer's import ------------------------------------------------

FAKE_PEER = '''
import warnings
warnings.warn("fakepeer: old_thing is deprecated", DeprecationWarning)
warnings.warn("fakepeer: soon gone", FutureWarning)
warnings.warn("fakepeer: a real problem", UserWarning)
warnings.filterwarnings("ignore", message="fakepeer dependency noise")
'''

REGISTER_FAKE = '''
sys.path.insert(0, {path!r})
from zarrfast.bench import libs as L

class Fake(L.Zarrfast):
    name = "fakepeer"
    module = "fakepeer"

L.LIBRARIES["fakepeer"] = Fake
'''


def test_a_peers_deprecation_warnings_are_not_shown(tmp_path, subprocess_cwd):
    (tmp_path / "fakepeer.py").write_text(FAKE_PEER)
    p = _bench(subprocess_cwd, *TINY, "--libs", "zarrfast,fakepeer",
               pre=REGISTER_FAKE.format(path=str(tmp_path)))
    assert p.returncode == 0, p.stderr
    assert "Deprecat" not in p.stderr and "FutureWarning" not in p.stderr, p.stderr
    assert "soon gone" not in p.stderr
    # the peer's other warnings are still shown, and the peer was measured
    assert "UserWarning: fakepeer: a real problem" in p.stderr
    assert re.search(r"raw +read +1 .* ok", p.stdout), p.stdout


def test_import_peer_keeps_the_filters_the_import_adds(tmp_path, monkeypatch):
    import warnings

    (tmp_path / "fakepeer2.py").write_text(FAKE_PEER.replace("fakepeer", "fakepeer2"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        L.import_peer("fakepeer2")
        assert [str(w.message) for w in caught] == ["fakepeer2: a real problem"]
        assert any(f[1] is not None and f[1].pattern == "fakepeer2 dependency noise"
                   for f in warnings.filters)
    with warnings.catch_warnings():  # -W error still turns the others into errors
        warnings.simplefilter("error")
        sys.modules.pop("fakepeer2")
        with pytest.raises(UserWarning, match="a real problem"):
            L.import_peer("fakepeer2")
    sys.modules.pop("fakepeer2", None)


def test_a_peer_missing_or_broken_is_told_apart(tmp_path, monkeypatch):
    (tmp_path / "brokenpeer.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class Missing(L.Lib):
        module = "no_such_peer_xyz"

    class Broken(L.Lib):
        module = "brokenpeer"

    assert Missing().probe() == L.NOT_INSTALLED
    why = Broken().probe()
    assert why.startswith("installed but cannot be imported") and "no_such_dependency" in why


# -- 2. and 4. a missing peer named once, with the way to add the peers --------------------


def test_a_missing_peer_is_named_once_with_how_to_add_it(subprocess_cwd):
    p = _bench(subprocess_cwd, *TINY, hide=["zarrs"])
    assert p.returncode == 0, p.stderr
    text = p.stdout + p.stderr
    assert text.count("zarr+zarrs") == 1, text
    assert "ModuleNotFoundError" not in text and "No module named" not in text
    line = next(x for x in text.splitlines() if "zarr+zarrs" in x)
    assert 'pip install "zarrfast[bench]"' in line and 'pip install ".[bench]"' in line
    assert text.count("pip install") == 2  # that one line: the package, a source checkout


def test_with_no_peer_installed_it_says_how_to_add_them(subprocess_cwd):
    p = _bench(subprocess_cwd, "--quick", "--size", "256KiB", "--repeat", "1",
               hide=["zarr", "zarrs", "tensorstore", "zarrista"])
    assert p.returncode == 0, p.stderr
    text = p.stdout + p.stderr
    # (the versions line names what is installed: here they are only hidden)
    shown = "\n".join(x for x in text.splitlines() if not x.startswith("versions:"))
    for peer in PEERS:
        assert shown.count(peer) == 1, (peer, text)
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("zarrfast was compared with no other library")
    assert 'pip install "zarrfast[bench]"' in last
    assert "ModuleNotFoundError" not in text and "unavailable" not in text
    # what zarrfast did is still summed up, from its own times
    assert "  zarrfast read the whole array in " in text


def test_quick_shows_zarr_python_in_every_operation(subprocess_cwd):
    pytest.importorskip("zarr")
    p = _bench(subprocess_cwd, "--quick", "--size", "256KiB", "--repeat", "1",
               "--libs", "zarr-python")
    assert p.returncode == 0, p.stderr
    rows = {line.split()[1]: line for line in p.stdout.splitlines()
            if line.startswith("zstd ") and line.split()[1] in ("read", "random", "write")}
    assert set(rows) == {"read", "random", "write"}, p.stdout
    for op, line in rows.items():
        assert re.search(r" x\d+\.\d\d ", line), (op, line)  # zarr-python's ratio


# -- 3. the size it says is the size it writes ---------------------------------------------


def test_the_header_gives_the_size_written(subprocess_cwd):
    p = _bench(subprocess_cwd, "--size", "3MiB", "--layouts", "raw", "--ops", "read",
               "--threads", "1", "--repeat", "1", "--libs", "zarrfast")
    assert p.returncode == 0, p.stderr
    shape = D.main_shape(parse_size("3MiB"))
    written = "3.1 MiB"
    assert D.main_shape(parse_size("3MiB")) == (64, 160, 160)  # 3.125 MiB
    header = p.stdout.splitlines()[0]
    assert header.startswith(f"# size {written} (uint16 {shape}: --size 3.0 MiB rounded"), header
    assert f"uint16 ({written})" in p.stdout  # the generating line
    assert f"{shape} uint16 {written}, chunks" in p.stdout  # the dataset line


def test_quick_writes_exactly_the_size_it_names():
    from zarrfast.cli import QUICK_SIZE, bench_config, build_parser

    cfg = bench_config(build_parser().parse_args(["bench", "--quick"]))
    assert cfg.size == QUICK_SIZE == 250 << 20
    assert H.array_bytes(cfg) == {"main": QUICK_SIZE}
    assert H.size_text(cfg) == "250.0 MiB (uint16 (320, 640, 640))"
    # the small-file layouts: their own size, named as theirs
    cfg = BenchConfig(size=QUICK_SIZE, layouts=["zstd", "small-files"])
    assert H.size_text(cfg) == ("250.0 MiB (uint16 (320, 640, 640)); 32.0 MiB (uint16 "
                                "(4096, 4096), small-file layouts)")


# -- 5. a plain summary, from the measured table --------------------------------------------


def _report(ratios, n_random=100, threads=(2,), layouts=("zstd",), missing=(), broken=()):
    libs = {"zarrfast": {"available": True}}
    for peer in PEERS:
        if peer in missing:
            libs[peer] = {"available": False, "reason": L.NOT_INSTALLED}
        elif peer in broken:
            libs[peer] = {"available": False, "reason": "installed but cannot be imported "
                                                        "(ImportError: bad)\nmore"}
        else:
            libs[peer] = {"available": True}
    results = []
    for layout in layouts:
        for t in threads:
            for op, by_lib in ratios.items():
                for lib, ratio in {"zarrfast": 1.0, **by_lib}.items():
                    results.append({"layout": layout, "op": op, "lib": lib, "threads": t,
                                    "times": [0.5 * ratio], "best_s": 0.5 * ratio,
                                    "ratio": ratio, "mib_s": 500 / ratio, "ok": True,
                                    "error": None})
    return {"libraries": libs, "results": results,
            "config": {"n_random": n_random, "array_bytes": {"main": 250 << 20}}}


def test_summary_sentences():
    report = _report({"read": {"zarr-python": 13.2, "tensorstore": 2.2, "zarrista": 1.04},
                      "random": {"zarr-python": 1.85, "tensorstore": 0.29},
                      "write": {"zarr-python": 2.17}}, missing=["zarr+zarrs"])
    assert summary(report) == [
        "summary (the zstd layout, 250.0 MiB, 2 threads):",
        "  zarrfast read the whole array 13.2x faster than zarr-python, 2.2x faster than "
        "tensorstore and about as fast as zarrista.",
        "  zarrfast read 100 random boxes 1.9x faster than zarr-python and 3.4x slower than "
        "tensorstore.",
        "  zarrfast wrote the whole array 2.2x faster than zarr-python.",
        'not installed, so not compared: zarr+zarrs. Add the peers with: pip install '
        '"zarrfast[bench]" (from a source checkout: pip install ".[bench]")']
    # several layouts and thread counts: the geometric mean at the most threads
    report = _report({"read": {"zarr-python": 4.0}}, layouts=("raw", "zstd"), threads=(1, 4))
    for r in report["results"]:
        if r["layout"] == "zstd" and r["lib"] == "zarr-python":
            r["ratio"] = 1.0  # (raw 4.0, zstd 1.0: the geometric mean is 2.0)
    assert summary(report)[:2] == ["summary (geometric mean over 2 layouts, 4 threads):",
                                   "  zarrfast read the whole array 2.0x faster than "
                                   "zarr-python."]
    # a broken peer: its reason's first line, and no install hint (it is installed)
    lines = summary(_report({"read": {}}, broken=PEERS))
    assert lines[-len(PEERS):] == [
        f"{p} left out: installed but cannot be imported (ImportError: bad)" for p in PEERS]
    assert not any("pip install" in x for x in lines)


def test_the_run_ends_with_the_summary_of_its_table(subprocess_cwd, tmp_path):
    pytest.importorskip("zarr")
    out = tmp_path / "out"
    p = _bench(subprocess_cwd, "--quick", "--size", "256KiB", "--repeat", "1",
               "--libs", "zarr-python", "--out", str(out), "--no-plot")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.rstrip().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("summary ("))
    said = [x for x in lines[at + 1:] if x.startswith("  zarrfast ")]
    # (faster, slower or about as fast: which one depends on the machine's load, so the
    # sentence is checked against the ratio below)
    assert len(said) == 3 and all(x.endswith(" zarr-python.") for x in said), lines[at:]
    report = json.loads((out / "bench.json").read_text())
    for op, sentence in zip(("read", "random", "write"), said, strict=True):
        r = next(r for r in report["results"] if r["op"] == op and r["lib"] == "zarr-python")
        ratio = r["ratio"]
        want = (f"{ratio:.1f}x faster" if ratio >= 1.1 else
                f"{1 / ratio:.1f}x slower" if ratio <= 1 / 1.1 else "about as fast as")
        assert want in sentence, (op, ratio, sentence)
        # and the table shows the same ratio
        row = next(x for x in lines if x.startswith("zstd ") and x.split()[1] == op)
        assert f"x{ratio:.2f}" in row


# -- 6. --help speaks to users ----------------------------------------------------------------


def test_bench_help_speaks_to_users(subprocess_cwd):
    p = subprocess.run([sys.executable, "-m", "zarrfast", "bench", "--help"],
                       capture_output=True, text=True, cwd=subprocess_cwd, timeout=60,
                       check=False)
    assert p.returncode == 0, p.stderr
    text = p.stdout
    for word in ("issue", "CI", "README", "main job"):
        assert not re.search(rf"\b{word}", text), word
    assert ('pip install "zarrfast[bench]" (from a source checkout: pip install ".[bench]")'
            in " ".join(text.split()))
    assert "250 MiB" in text and "256 MiB" not in text
    assert all(len(line) <= 100 for line in text.splitlines())

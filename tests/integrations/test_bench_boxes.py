"""The harness's ``boxes`` operation (random boxes one to two chunks long per side) and
``--busy N`` (competing CPU-bound processes for the whole run), on tiny datasets."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from zarrfast.bench import BenchConfig, parse_size, run
from zarrfast.bench import data as D
from zarrfast.bench import harness as H
from zarrfast.bench import libs as L
from zarrfast.cli import bench_config, build_parser


def _cfg(tmp_path, **kw):
    base = {"size": parse_size("2MiB"), "layouts": ["zstd"], "ops": ["boxes"], "threads": [1],
            "libs": ["zarrfast"], "repeat": 1, "n_random": 6, "path": str(tmp_path / "data")}
    base.update(kw)
    return BenchConfig(**base)


def _children() -> set[int]:
    """The pids of this process's live children (from /proc)."""
    me, out = os.getpid(), set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            out.add(int(name))
    return out


def test_boxes_are_one_to_two_chunks_per_side(tmp_path):
    cfg = _cfg(tmp_path, n_random=200)
    ds = D.Dataset(D.LAYOUTS["zstd"], (96, 128, 160), str(tmp_path / "x"))
    ctx = H._Context(cfg, str(tmp_path))
    boxes = ctx.boxes(ds, "boxes")
    assert len(boxes) == 200
    sides = np.array([[s.stop - s.start for s in b] for b in boxes])
    assert sides.min() == 32 and sides.max() == 64  # [chunk, 2 chunks], both ends reached
    for b in boxes:
        assert all(0 <= s.start < s.stop <= n for s, n in zip(b, ds.shape, strict=True))
    starts = np.array([[s.start for s in b] for b in boxes])
    assert (starts % 32 != 0).mean() > 0.9  # random offsets, mostly unaligned
    # a fixed seed: the same boxes again; the random op's own boxes are not these
    assert H._Context(cfg, str(tmp_path)).boxes(ds, "boxes") == boxes
    assert max(s.stop - s.start for b in ctx.boxes(ds) for s in b) <= 32


def test_boxes_op_reads_and_checks_every_library(tmp_path, monkeypatch):
    class OffByOne(L.Zarrfast):
        name = "off-by-one"

        def read(self, h, sel=Ellipsis):
            got = np.array(h[sel])
            got.flat[got.size // 2] += 1
            return got

    monkeypatch.setitem(L.LIBRARIES, "off-by-one", OffByOne)
    cfg = _cfg(tmp_path, layouts=["zstd", "sharded"], ops=["random", "boxes", "floor"],
               libs=["zarrfast", "off-by-one"])
    code, report = run(cfg, out=io.StringIO())
    assert code == 1  # the wrong library's boxes are caught
    got = {(r["layout"], r["op"], r["lib"]): r for r in report["results"]}
    for lay in ("zstd", "sharded"):
        z = got[(lay, "boxes", "zarrfast")]
        assert z["ok"] is True and z["best_s"] > 0, z
        assert z["nbytes"] >= 6 * 32**3 * 2  # every box at least a chunk per side
        assert got[(lay, "boxes", "off-by-one")]["ok"] is False
        assert "WRONG DATA" in got[(lay, "boxes", "off-by-one")]["error"]
        assert got[(lay, "boxes", "floor: decode only")]["ok"] is True
        assert got[(lay, "random", "zarrfast")]["ok"] is True


def test_busy_processes_run_during_the_rounds_and_stop_after(tmp_path, monkeypatch):
    seen: list[set[int]] = []

    class Watching(L.Zarrfast):
        name = "watching"

        def read(self, h, sel=Ellipsis):
            seen.append(_children())
            return h[sel]

    monkeypatch.setitem(L.LIBRARIES, "watching", Watching)
    before = _children()
    out = io.StringIO()
    code, report = run(_cfg(tmp_path, libs=["zarrfast", "watching"], busy=2), out=out)
    assert code == 0
    assert seen and all(len(s - before) == 2 for s in seen)  # both ran at every read
    assert "2 busy processes" in out.getvalue()
    assert report["config"]["busy"] == 2 and "2 competing" in report["notes"]["busy"]
    assert _children() == before  # killed and reaped
    for pid in set.union(*seen) - before:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_busy_processes_stop_on_keyboard_interrupt(tmp_path, monkeypatch):
    class Interrupted(L.Zarrfast):
        name = "interrupted"

        def read(self, h, sel=Ellipsis):
            raise KeyboardInterrupt

    monkeypatch.setitem(L.LIBRARIES, "interrupted", Interrupted)
    before = _children()
    with pytest.raises(KeyboardInterrupt):
        run(_cfg(tmp_path, libs=["zarrfast", "interrupted"], busy=1), out=io.StringIO())
    assert _children() == before


def test_busy_processes_stop_on_error():
    with pytest.raises(RuntimeError), H.busy_processes(2) as procs:
        assert len(procs) == 2 and all(p.poll() is None for p in procs)
        raise RuntimeError("stop")
    assert all(p.returncode is not None for p in procs)


def test_cli_busy_and_boxes_flags():
    args = build_parser().parse_args(["bench", "--ops", "boxes", "--busy", "1"])
    cfg = bench_config(args)
    assert (cfg.ops, cfg.busy) == (["boxes"], 1)
    assert bench_config(build_parser().parse_args(["bench"])).busy == 0
    with pytest.raises(ValueError, match="--busy"):
        BenchConfig(busy=-1).validate()

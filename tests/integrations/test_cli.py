"""The ``zarrfast`` command line: every subcommand in-process (``main([...])``) and as a
real process (``python -m zarrfast.cli`` and the ``zarrfast`` console script), the exit
codes of every class of failure, and the help texts."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import zarrfast
from zarrfast import cli
from zarrfast.cli import main

from _helpers.files import file_bytes as _files


@pytest.fixture
def tree(tmp_path):
    """A v3 hierarchy: a sharded array, a compressed array in a subgroup, attributes."""
    root = tmp_path / "tree.zarr"
    g = zarrfast.open_group(str(root), mode="w", attributes={"title": "cli test"})
    a = g.create_array("a", shape=(20, 30), chunks=(5, 5), shards=(10, 10), dtype="int32")
    a[...] = np.arange(600, dtype="int32").reshape(20, 30)
    sub = g.create_group("sub", attributes={"k": 1})
    b = sub.create_array("b", shape=(17,), chunks=(4,), dtype="float64")
    b[...] = np.linspace(0, 1, 17)
    return root


@pytest.fixture
def v2_array(tmp_path):
    path = tmp_path / "v2.zarr"
    a = zarrfast.create_array(str(path), shape=(9, 7), chunks=(4, 4), dtype=">u2",
                              zarr_format=2, order="F", compressors={"id": "zstd", "level": 3})
    a[...] = np.arange(63, dtype="u2").reshape(9, 7)
    return path




def _script() -> str | None:
    """The console script installed with this interpreter (not another one on PATH)."""
    for name in ("zarrfast", "zarrfast.exe"):
        path = os.path.join(os.path.dirname(sys.executable), name)
        if os.path.exists(path):
            return path
    return None


def _run(*args, cwd, script=False, timeout=120):
    """``zarrfast *args`` as a process, in ``cwd`` (a temporary directory: ``python -m``
    from a source checkout would import the source tree, not the installed package)."""
    cmd = ([_script()] if script
           else [sys.executable, "-m", "zarrfast.cli"]) + [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, check=False)


# -- help, version ------------------------------------------------------------------------


def _parsers(parser: argparse.ArgumentParser, name="zarrfast"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for sub_name, sub in action.choices.items():
                if id(sub) in seen:  # aliases
                    continue
                seen.add(id(sub))
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_command_and_flag_has_help():
    parsers = list(_parsers(cli.build_parser()))
    names = [n for n, _ in parsers]
    for want in ("zarrfast info", "zarrfast convert", "zarrfast copy", "zarrfast bench",
                 "zarrfast geozarr", "zarrfast geozarr validate"):
        assert want in names
    for name, p in parsers:
        assert p.epilog and "exit codes:" in p.epilog, name
        if name not in ("zarrfast geozarr",):
            assert "examples:" in p.epilog, name
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, f"{name} {choice.dest}"
                continue
            assert action.help and action.help != argparse.SUPPRESS, \
                f"{name}: {action.option_strings or action.dest} has no help"


def test_help_lists_commands_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for word in ("info (tree)", "convert", "copy", "bench", "geozarr", "--version", "--debug"):
        assert word in out
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "130"):
        assert f"\n  {code}" in out
    with pytest.raises(SystemExit) as e:
        main(["bench", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for layout in ("raw", "zstd", "blosc", "gzip", "sharded", "transposed", "big-endian", "v2",
                   "small-files", "small-sharded"):
        assert f"\n  {layout} " in out
    for flag in ("--quick", "--size", "--layouts", "--ops", "--threads", "--libs", "--repeat",
                 "--path", "--out", "--drop-caches", "--scheduler", "--codec"):
        assert flag in out


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"zarrfast {zarrfast.__version__}"
    from zarrfast.kernels import CODEC_BINDINGS  # and how each codec library is bound

    assert out[2:] == [f"{c}: {how}" for c, how in sorted(CODEC_BINDINGS.items())]


def test_usage_errors_exit_2(capsys):
    for argv in ([], ["nope"], ["info"], ["convert", "a"], ["bench", "--size", "lots"],
                 ["bench", "--threads", "0"], ["bench", "--threads", "x"],
                 ["convert", "a", "b", "--zarr-format", "4"],
                 ["info", "x", "--storage-options", "{not json"],
                 ["info", "x", "--storage-options", "[1, 2]"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2, argv
    err = capsys.readouterr().err
    assert "not valid JSON" in err and "expected a JSON object" in err


# -- info / tree ---------------------------------------------------------------------------


def test_info_and_tree_alias(tree, capsys):
    assert main(["info", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "(group, Zarr v3)" in out
    assert ("a (20, 30) int32 chunks (5, 5) shards (10, 10) [sharding_indexed(inner: bytes, zstd; "
            "index: bytes, crc32c)]") in out
    assert "  sub/" in out and "    b (17,) float64 chunks (4,)" in out
    assert main(["tree", str(tree)]) == 0
    assert capsys.readouterr().out == out
    assert main(["info", str(tree), "--node", "sub/b"]) == 0
    assert "(array, Zarr v3) (17,) float64" in capsys.readouterr().out


def test_info_v2(v2_array, capsys):
    assert main(["info", str(v2_array)]) == 0
    out = capsys.readouterr().out
    assert "(array, Zarr v2)" in out and ">u2" in out


def _file_sizes(root, *, metadata: bool):
    names = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}
    return sum(p.stat().st_size for p in root.rglob("*")
               if p.is_file() and (p.name in names) == metadata)


def test_info_gives_chunk_and_metadata_bytes_apart(tree, v2_array, capsys):
    from zarrfast.cli import _size

    assert main(["info", str(tree), "--node", "a"]) == 0
    out = capsys.readouterr().out
    chunks, meta = (_file_sizes(tree / "a", metadata=m) for m in (False, True))
    assert chunks > 0 and meta > 0
    assert out.rstrip().endswith(f"stored: {_size(chunks)} in chunks, {_size(meta)} metadata")
    assert main(["info", str(v2_array)]) == 0  # v2: .zarray (and .zattrs) are metadata
    out = capsys.readouterr().out
    chunks, meta = (_file_sizes(v2_array, metadata=m) for m in (False, True))
    assert out.rstrip().endswith(f"stored: {_size(chunks)} in chunks, {_size(meta)} metadata")


def test_info_shows_the_codecs_inside_a_shard(tmp_path, capsys):
    from zarrfast.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec

    path = tmp_path / "s.zarr"
    a = zarrfast.create_array(str(path), shape=(8, 8), chunks=(2, 2), shards=(4, 4),
                              dtype="uint16", compressors=[ZstdCodec(level=3)])
    a[...] = 1
    assert main(["info", str(path)]) == 0
    assert ("[sharding_indexed(inner: bytes, zstd; index: bytes, crc32c)]"
            in capsys.readouterr().out)
    # shards of shards, and an index without a checksum
    inner = ShardingCodec(chunk_shape=(1, 1), codecs=(BytesCodec(),),
                          index_codecs=(BytesCodec(), Crc32cCodec()))
    nested = ShardingCodec(chunk_shape=(2, 2), codecs=(inner,), index_codecs=(BytesCodec(),))
    path2 = tmp_path / "n.zarr"
    zarrfast.create_array(str(path2), shape=(4, 4), chunks=(4, 4), dtype="uint8",
                          serializer=nested, compressors=None)[...] = 2
    assert main(["info", str(path2)]) == 0
    assert ("[sharding_indexed(inner: sharding_indexed(inner: bytes; index: bytes, crc32c); "
            "index: bytes)]") in capsys.readouterr().out


def test_info_v2_shows_its_filters_and_compressor(tmp_path, v2_array, capsys):
    strings = tmp_path / "strings.zarr"
    a = zarrfast.create_array(str(strings), shape=(3,), dtype=str, zarr_format=2,
                              compressors={"id": "zstd", "level": 1})
    a[...] = ["a", "bb", "ccc"]
    assert json.loads((strings / ".zarray").read_text())["filters"] == [{"id": "vlen-utf8"}]
    assert main(["info", str(strings)]) == 0
    out = capsys.readouterr().out
    assert "[filters: vlen-utf8; compressor: zstd]" in out
    assert "bytes" not in out.split("stored:")[0]  # v2 has no bytes codec
    assert main(["info", str(v2_array)]) == 0  # order F: no transpose codec either
    out = capsys.readouterr().out
    assert "chunks (4, 4) order F [compressor: zstd]" in out and "transpose" not in out
    plain = tmp_path / "plain.zarr"
    zarrfast.create_array(str(plain), shape=(4,), dtype="f4", zarr_format=2, compressors=None)
    assert main(["info", str(plain)]) == 0
    assert "[compressor: none]" in capsys.readouterr().out


# -- convert / copy -------------------------------------------------------------------------


def test_convert_both_ways(tree, tmp_path, capsys):
    v2 = tmp_path / "as_v2.zarr"
    assert main(["convert", str(tree), str(v2), "--zarr-format", "2", "--quiet"]) == 0
    assert "Zarr v2" in capsys.readouterr().out
    assert (v2 / ".zgroup").exists() and (v2 / "sub" / "b" / ".zarray").exists()
    back = tmp_path / "back.zarr"
    assert main(["convert", str(v2), str(back), "--quiet"]) == 0
    np.testing.assert_array_equal(zarrfast.open_array(str(back), path="a")[...],
                                  np.arange(600).reshape(20, 30))
    assert zarrfast.open_group(str(back)).attrs["title"] == "cli test"
    # a node inside the source, to a node inside the target
    part = tmp_path / "part.zarr"
    assert main(["convert", str(tree), str(part), "--src-path", "sub", "--dst-path", "x/y",
                 "--quiet"]) == 0
    np.testing.assert_array_equal(zarrfast.open_array(str(part), path="x/y/b")[...],
                                  np.linspace(0, 1, 17))


def test_copy_keeps_format_and_bytes(tree, v2_array, tmp_path, capsys):
    dst = tmp_path / "copy.zarr"
    assert main(["copy", str(tree), str(dst), "--quiet"]) == 0
    assert "Zarr v3, 2 arrays, 2 groups" in capsys.readouterr().out
    src_files, dst_files = _files(tree), _files(dst)
    chunks = [k for k in src_files if "zarr.json" not in k]
    assert chunks and all(src_files[k] == dst_files[k] for k in chunks)  # bytes unchanged
    assert set(src_files) == set(dst_files)
    assert json.loads(dst_files["a/zarr.json"])["codecs"] == \
        json.loads(src_files["a/zarr.json"])["codecs"]
    # v2 stays v2, with its F order, big-endian dtype and compressor
    dst2 = tmp_path / "copy_v2.zarr"
    assert main(["copy", str(v2_array), str(dst2), "--quiet"]) == 0
    s, d = _files(v2_array), _files(dst2)
    assert set(s) == set(d) and all(s[k] == d[k] for k in s if k != ".zarray")
    za = json.loads(d[".zarray"])
    assert (za["order"], za["dtype"], za["compressor"]["id"]) == ("F", ">u2", "zstd")


def test_copy_refuses_to_overwrite_unless_asked(tree, tmp_path, capsys):
    dst = tmp_path / "c.zarr"
    assert main(["copy", str(tree), str(dst), "--quiet"]) == 0
    assert main(["copy", str(tree), str(dst), "--quiet"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["copy", str(tree), str(dst), "--quiet", "--overwrite"]) == 0


def test_refusals_name_the_overwrite_flag_not_the_keyword(tree, tmp_path, capsys):
    dst = tmp_path / "c.zarr"
    assert main(["copy", str(tree), str(dst), "--quiet"]) == 0
    capsys.readouterr()
    afile = tmp_path / "file.zarr"
    afile.write_text("not a directory")
    for argv in (["copy", str(tree), str(dst), "--quiet"],  # a group there
                 ["convert", str(tree), str(dst), "--quiet", "--dst-path", "a"],  # an array
                 ["copy", str(tree), str(afile), "--quiet"]):  # a file there
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("zarrfast: error:") and err.count("\n") == 1, err
        assert "pass --overwrite to replace" in err, err
        assert "overwrite=True" not in err and "mode=" not in err, err
        assert err.count("--overwrite") == 1, err


def test_copy_into_a_zip_and_back(tree, tmp_path, capsys):
    z = tmp_path / "t.zip"
    assert main(["copy", str(tree), str(z), "--quiet"]) == 0
    assert main(["info", str(z)]) == 0
    assert "shards (10, 10)" in capsys.readouterr().out
    out = tmp_path / "from_zip.zarr"
    assert main(["copy", str(z), str(out), "--quiet"]) == 0
    np.testing.assert_array_equal(zarrfast.open_array(str(out), path="a")[...],
                                  np.arange(600).reshape(20, 30))


def test_storage_options_pass_through(tree, tmp_path, monkeypatch):
    from zarrfast.storage import resolve as _resolve

    real = _resolve.make_store
    calls = []

    def recording(target, *, read_only=False, storage_options=None):
        calls.append((os.path.basename(str(target)), read_only, storage_options))
        return real(target, read_only=read_only)

    monkeypatch.setattr(_resolve, "make_store", recording)
    assert main(["info", str(tree), "--storage-options", '{"anon": true}']) == 0
    assert calls[-1] == ("tree.zarr", True, {"anon": True})
    calls.clear()
    assert main(["copy", str(tree), str(tmp_path / "o.zarr"), "--quiet",
                 "--storage-options", '{"both": 1}', "--dst-storage-options", '{"d": 2}']) == 0
    assert calls == [("tree.zarr", True, {"both": 1}), ("o.zarr", False, {"d": 2})]
    calls.clear()
    assert main(["convert", str(tree), str(tmp_path / "p.zarr"), "--quiet",
                 "--src-storage-options", '{"s": 1}']) == 0
    # a destination without options goes to convert as the path it is (written beside
    # it and renamed into place), not through the command's resolver
    assert calls == [("tree.zarr", True, {"s": 1})]


def test_storage_options_reach_the_real_resolver(tree, capsys):
    # the resolver refuses options a local directory cannot use: a bad-input error
    assert main(["info", str(tree), "--storage-options", '{"anon": true}']) == 2
    assert "storage_options" in capsys.readouterr().err


# -- geozarr validate -------------------------------------------------------------------


def test_geozarr_validate_exit_codes(tmp_path, capsys):
    ok = tmp_path / "empty.zarr"
    zarrfast.open_group(str(ok), mode="w")
    assert main(["geozarr", "validate", str(ok), "--as", "dataset"]) == 0
    assert "valid GeoZarr dataset" in capsys.readouterr().out
    bad = tmp_path / "bad.zarr"
    zarrfast.open_group(str(bad), mode="w")
    assert main(["geozarr", "validate", str(bad), "--as", "multiscale", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False and report["findings"]


# -- exit codes ------------------------------------------------------------------------------


def test_not_found_exits_3(tmp_path, capsys):
    assert main(["info", str(tmp_path / "missing.zarr")]) == 3
    err = capsys.readouterr().err
    assert err.startswith("zarrfast: not found:") and err.count("\n") == 1
    assert main(["copy", str(tmp_path / "missing.zarr"), str(tmp_path / "o"), "--quiet"]) == 3
    assert main(["convert", str(tmp_path / "missing.zarr"), str(tmp_path / "o")]) == 3


def test_bad_input_exits_2(tmp_path, capsys):
    broken = tmp_path / "broken.zarr"
    broken.mkdir()
    (broken / "zarr.json").write_text('{"zarr_format": 3, "node_type": "array"}')
    assert main(["info", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zarrfast: error:") and "Traceback" not in err
    assert main(["bench", "--layouts", "nope"]) == 2
    assert "unknown layout" in capsys.readouterr().err
    assert main(["bench", "--codec", "none", "--layouts", "raw"]) == 2


def _rendered(text: str) -> list[str]:
    """The lines a terminal shows for ``text``: a carriage return goes back to the start
    of the line, later characters overwrite earlier ones."""
    lines = []
    for raw in text.split("\n"):
        buf: list[str] = []
        col = 0
        for ch in raw:
            if ch == "\r":
                col = 0
                continue
            if col < len(buf):
                buf[col] = ch
            else:
                buf.append(ch)
            col += 1
        lines.append("".join(buf).rstrip())
    return lines


@pytest.mark.parametrize("error", ["zarrfast", "interrupt"])
def test_an_error_mid_progress_starts_its_own_line(tree, monkeypatch, capsys, error):
    from zarrfast.errors import ZarrfastError

    def fails_mid_copy(args):
        from tqdm.auto import tqdm

        bar = tqdm(total=10, unit="chunk", desc="copy", file=sys.stderr, mininterval=0)
        bar.update(4)  # drawn, never closed: the command stops here
        if error == "interrupt":
            raise KeyboardInterrupt
        raise ZarrfastError("the source went away")

    monkeypatch.setattr(cli, "_cmd_copy", fails_mid_copy)
    code = main(["copy", str(tree), str(tree.parent / "out.zarr")])
    err = capsys.readouterr().err
    assert "4/10" in err  # the bar was drawn
    want = ("zarrfast: interrupted" if error == "interrupt"
            else "zarrfast: error: the source went away")
    assert code == (130 if error == "interrupt" else 2)
    assert want in _rendered(err), repr(err)
    assert not any("4/10" in line for line in _rendered(err)), repr(err)  # cleared


def test_interrupt_exits_130_without_traceback(tree, monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_cmd_info", interrupted)
    assert main(["info", str(tree)]) == 130
    err = capsys.readouterr().err
    assert err == "zarrfast: interrupted\n"


def test_unexpected_error_one_line_and_debug_traceback(tree, monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("kaboom\nsecond line")

    monkeypatch.setattr(cli, "_cmd_info", boom)
    assert main(["info", str(tree)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kaboom" in err and "--debug" in err
    assert "Traceback" not in err
    assert main(["info", str(tree), "--debug"]) == 4
    assert "Traceback" in capsys.readouterr().err
    assert main(["--debug", "info", str(tree)]) == 4
    assert "Traceback" in capsys.readouterr().err


# -- real processes ------------------------------------------------------------------------


@pytest.mark.parametrize("script", [False, True], ids=["python-m", "console-script"])
def test_subcommands_in_a_process(tree, tmp_path, subprocess_cwd, script):
    if script and _script() is None:
        pytest.skip("the zarrfast console script is not installed")
    p = _run("--version", script=script, cwd=subprocess_cwd)
    assert p.returncode == 0 and p.stdout.splitlines()[0] == f"zarrfast {zarrfast.__version__}"
    p = _run("info", tree, script=script, cwd=subprocess_cwd)
    assert p.returncode == 0 and "(group, Zarr v3)" in p.stdout, p.stderr
    p = _run("tree", tree, "--node", "sub", script=script, cwd=subprocess_cwd)
    assert p.returncode == 0 and "b (17,)" in p.stdout, p.stderr
    p = _run("copy", tree, tmp_path / "c.zarr", script=script, cwd=subprocess_cwd)
    assert p.returncode == 0, p.stderr
    assert "100%" in p.stderr and "chunk" in p.stderr  # the progress bar
    p = _run("convert", tree, tmp_path / "v2.zarr", "--zarr-format", "2", "--quiet",
             script=script, cwd=subprocess_cwd)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    p = _run("geozarr", "validate", tmp_path / "v2.zarr", "--as", "dataset", script=script,
             cwd=subprocess_cwd)
    assert p.returncode in (0, 1) and "GeoZarr dataset" in p.stdout, p.stderr
    p = _run("bench", "--size", "256KiB", "--layouts", "raw", "--ops", "read",
             "--libs", "zarrfast", "--repeat", "1", "--threads", "1", script=script,
             cwd=subprocess_cwd)
    assert p.returncode == 0 and "zarrfast" in p.stdout and " ok" in p.stdout, p.stderr
    p = _run("info", tmp_path / "missing.zarr", script=script, cwd=subprocess_cwd)
    assert p.returncode == 3 and "Traceback" not in p.stderr
    p = _run("info", script=script, cwd=subprocess_cwd)
    assert p.returncode == 2 and "usage:" in p.stderr
    p = _run("--help", script=script, cwd=subprocess_cwd)
    assert p.returncode == 0 and "exit codes:" in p.stdout


def test_sigint_in_a_process_exits_130(tmp_path, subprocess_cwd):
    """A real Ctrl-C while the harness generates its data: exit 130, no traceback.  The
    signal goes when the child says it is generating the data set (1 GiB of gzip chunks:
    longer than any signal takes to arrive), not half a second after it started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "zarrfast.cli", "bench", "--size", "1GiB", "--layouts", "gzip",
         "--libs", "zarrfast", "--path", str(tmp_path / "d")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=subprocess_cwd)
    try:
        lines = [proc.stdout.readline()]
        while lines[-1] and not lines[-1].startswith("# generating"):
            lines.append(proc.stdout.readline())  # ("" at the end of the output)
        assert lines[-1].startswith("# generating gzip"), lines  # the cue
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err

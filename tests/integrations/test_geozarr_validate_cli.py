"""``zarrfast geozarr validate`` on the command line: exit codes, ``--recommended``,
warnings only, ``--json``, ``--grid-mapping`` and missing paths.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from zarrfast.cli import main as cli_main
from zarrfast.storage import LocalStore

from _helpers.geozarr_docs import WMQ, A, G, dataset, merge, multiscale, rooted, write_tree

# -- command line -----------------------------------------------------------------------


def _write_local(tmp_path: Any, tree: dict) -> str:
    path = tmp_path / "cli.zarr"
    write_tree(LocalStore(path), tree)
    return str(path)


def test_cli_valid(tmp_path: Any, capsys: Any) -> None:
    path = _write_local(tmp_path, multiscale(3, WMQ()))
    assert cli_main(["geozarr", "validate", path]) == 0
    out = capsys.readouterr().out
    assert "valid" in out and "INVALID" not in out
    assert cli_main(["geozarr", "validate", path, "--as", "multiscale"]) == 0
    assert cli_main(["geozarr", "validate", path, "--as", "dataset"]) == 0  # levels are groups
    assert cli_main(["geozarr", "validate", path, "--as", "dataarray"]) == 1


def test_cli_errors_exit_nonzero(tmp_path: Any, capsys: Any) -> None:
    path = _write_local(tmp_path, rooted(2, dataset(2), {"x": A(2, [4], ["x"])}))
    assert cli_main(["geozarr", "validate", path, "--as", "dataset"]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and "E DS5 /data" in out


def test_cli_recommended_only(tmp_path: Any, capsys: Any) -> None:
    path = _write_local(tmp_path, rooted(2, {"data": A(2, [2, 2], ["y", "y"]),
                                            "y": A(2, [2], ["y"])}))
    assert cli_main(["geozarr", "validate", path]) == 1
    assert "R DA5 /data" in capsys.readouterr().out
    assert cli_main(["geozarr", "validate", path, "--no-recommended"]) == 0


def test_cli_warnings_only_exit_zero(tmp_path: Any, capsys: Any) -> None:
    path = _write_local(tmp_path, rooted(3, dataset(3, x=2, y=2), {"x": A(3, [2], ["y"])}))
    assert cli_main(["geozarr", "validate", path]) == 0
    assert "W DS6 /x" in capsys.readouterr().out


def test_cli_json(tmp_path: Any, capsys: Any) -> None:
    path = _write_local(tmp_path, merge(multiscale(3, WMQ(resampling_method="Average")),
                                        {"zz": G(3)}))
    assert cli_main(["geozarr", "validate", path, "--json", "--as", "multiscale"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is False and doc["as"] == "multiscale" and doc["path"] == path
    assert {(f["severity"], f["rule"], f["path"]) for f in doc["findings"]} == {
        ("E", "MS3", "/"), ("W", "MS12", "/zz")}
    assert all(set(f) == {"rule", "severity", "path", "message"} for f in doc["findings"])
    ok = _write_local(tmp_path / "ok", {"": A(3, [3], ["x"])})
    assert cli_main(["geozarr", "validate", ok, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"path": ok, "as": "auto", "valid": True,
                                                   "findings": []}


def test_cli_grid_mapping_flag_and_missing_path(tmp_path: Any, capsys: Any) -> None:
    path = _write_local(tmp_path, rooted(3, {"spatial_ref": A(3, [], [], attrs={
        "grid_mapping_name": "latitude_longitude"})}))
    assert cli_main(["geozarr", "validate", path]) == 1
    assert cli_main(["geozarr", "validate", path, "--allow-grid-mapping-scalars"]) == 0
    assert cli_main(["geozarr", "validate", str(tmp_path / "nothing")]) == 1
    assert "E Z1 /" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main(["geozarr", "validate", path, "--as", "pyramid"])

"""The engine's tests run as on a machine whose cores are free: the box reads' check of
other work on the cores (``zarrfast.concurrency.cores_contended``, issue 44) would make
their helper threads' share of a read depend on what else runs on the machine.
``test_box_contention.py`` turns the check on for its own tests."""

from __future__ import annotations

import pytest

from zarrfast import concurrency


@pytest.fixture(autouse=True)
def _cores_free(monkeypatch):
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", False)

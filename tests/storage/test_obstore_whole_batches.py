"""``ObjectStore.get_many`` of several whole values over HTTP (a real loopback server,
``_helpers.fault_http``): a misbehaving answer in a batch is retried, refused or read
again whole, never returned as other bytes; an empty value reads as ``b""``, a missing
one as ``None``; a failure that lasts names the key and its URL (the bound of
requests in flight: ``tests/engine/test_remote_reads_in_flight.py``).

A guard for faster batch paths: obstore's ``get_range_async`` (one future a value, its
body gathered by obstore's runtime: ~30 ms less client CPU per batch of the remote
loader's rows, 435 values) gives no ``Content-Range`` to check the body against, and
returned the oversized answer's 7 junk bytes as the value's last bytes
(``test_one_misbehaving_answer_in_a_batch_gives_the_right_bytes[oversized]`` failed
so); the blocking reads check every body (``_check_body``)."""

from __future__ import annotations

import pytest

pytest.importorskip("obstore")

from zarrfast.storage import RetriesExhaustedError, RetryPolicy  # noqa: E402
from zarrfast.storage.obstore import ObjectStore  # noqa: E402

from _helpers import fault_fixtures  # noqa: E402

# (the module's fault server and, emptied for each test, ``served``)
server = fault_fixtures.server
served = fault_fixtures.served

FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
#: values of several sizes (one past a typical socket read), and an empty one
VALUES = {f"k{i}": bytes((i * 7 + j) % 251 for j in range(n))
          for i, n in enumerate([1, 10_240, 300_000, 65_536, 12_345])}
VALUES["empty"] = b""


@pytest.fixture(autouse=True)
def _values(served):
    """``served`` (emptied) holds VALUES under ``d/``."""
    for k, v in VALUES.items():
        served.objects[f"d/{k}"] = v


def _store(server, **kw) -> ObjectStore:
    return ObjectStore.from_url(server.url("d"), retry=FAST_RETRY, timeout=0.5, **kw)


def test_whole_values_missing_and_empty(served):
    store = _store(served)
    keys = [*VALUES, "missing", "k2"]
    got = store.get_many(keys)
    assert [None if g is None else bytes(g) for g in got] == [
        *VALUES.values(), None, VALUES["k2"]]
    assert len([r for r in served.requests if r[0] == "GET"]) == len(keys)  # (one each)


@pytest.mark.parametrize("kind", ["503", "stall", "short", "reset", "oversized", "norange"])
def test_one_misbehaving_answer_in_a_batch_gives_the_right_bytes(served, kind):
    """One answer of the batch misbehaves: retried (503, stall, short, reset), refused
    and retried (oversized: more bytes than its Content-Range says, or junk past a
    whole body) or taken whole (norange: 200): every value is the right one."""
    store = _store(served)
    keys = [k for k in VALUES if k != "empty"]
    served.fail(kind, 1, path="d/k2", seconds=3)
    for _ in range(2):  # (the second batch: the connection pool is sound)
        got = store.get_many(keys)
        assert [bytes(g) for g in got] == [VALUES[k] for k in keys]
    # (the fault was met: k2 read again where its answer was refused)
    again = kind in ("503", "stall", "short", "reset")
    assert sum(1 for r in served.requests if r[:2] == ("GET", "d/k2")) >= (3 if again else 2)


def test_a_lasting_failure_names_the_key_and_its_url(served):
    store = _store(served)
    served.fail("503", 100, path="d/k3")
    with pytest.raises(RetriesExhaustedError) as info:
        store.get_many(["k1", "k3", "k4"])
    assert info.value.attempts == 3
    assert served.url("d/k3") in str(info.value) and "'k3'" in str(info.value)

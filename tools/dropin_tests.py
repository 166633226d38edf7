"""Run zarr-python's own public-API tests against zarrfast, through a module alias.

zarr-python's tests for arrays, groups, indexing and attributes import both its public
modules (``zarr``, ``zarr.storage``, ``zarr.api.asynchronous``, ...) and its internals
(``zarr.core.*``, ``zarr.testing``, ``zarr.abc``, ...). This tool runs them twice with
pytest:

- ``zarr``: as they are, with zarr-python;
- ``zarrfast``: zarr-python and its internals are imported first, then every *public*
  module in ``sys.modules`` is replaced by an alias of zarrfast's counterpart
  (``zarr`` -> ``zarrfast``, ``zarr.storage`` -> ``zarrfast.storage``, ...). A name
  zarr-python's public module has and zarrfast lacks becomes a placeholder that fails
  when it is used. Public objects a test module imported through an internal path
  (``from zarr.core.group import AsyncGroup``) are rebound to zarrfast's, in the test
  module's globals, in the attributes of its classes (``test_cls = Int8``) and among a
  test's parameters.

A test counts as *public* when its own code (decorators and parametrisation included,
annotations left out) names nothing that only zarr-python's internals provide: no name
imported from them and no ``zarr.core.``-like chain.  Its fixtures and the helper
functions it calls may use internals (``sync``, ``default_buffer_prototype``, an
expected value computed with ``zarr.core.indexing``): they stay zarr-python's and run.
The report gives, among the public tests that pass with zarr-python, how many pass
with zarrfast, and the most common reasons for the rest::

    python tools/dropin_tests.py /path/to/zarr-3.4.2 [--wider | --files test_array.py ...]
        [--show 30] [--keep DIR]

The default files are the public-API tests: test_array, test_group, test_indexing and
test_attributes. ``--wider`` runs the wider set instead: test_api (the module and the
folder), test_properties, test_metadata, test_codecs and test_dtype. ``--files`` takes
files or folders under ``tests/``.

It needs ``zarr``, ``zarrfast``, pytest, pytest-asyncio and hypothesis importable by the
same interpreter. ``/path/to/zarr-3.4.2`` is zarr-python's source holding ``tests/``: its
source distribution (unpacked, or the ``.tar.gz``, unpacked into a temporary folder) or a
checkout, of the zarr-python version installed (the tool warns when they differ).
zarrfast follows zarr-python 3.4.2, whose tests need Python 3.12::

    cd /work/sdists && python3.12 -m pip download --no-binary :all: --no-deps zarr==3.4.2
    tar xzf zarr-3.4.2.tar.gz
    /work/venv312/bin/python tools/dropin_tests.py /work/sdists/zarr-3.4.2
    /work/venv312/bin/python tools/dropin_tests.py /work/sdists/zarr-3.4.2 --wider
"""

from __future__ import annotations

import argparse
import ast
import collections
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import textwrap
import types
from pathlib import Path

from _zarr_sdist import check_version, source_of  # (a module beside this tool)

#: zarr-python's public modules and zarrfast's counterparts (``zarr.abc.store`` is the
#: public base class of stores, zarrfast's is in ``zarrfast.storage``)
PUBLIC = {"zarr": "zarrfast", "zarr.api": "zarrfast.api",
          "zarr.api.synchronous": "zarrfast.api.synchronous",
          "zarr.api.asynchronous": "zarrfast.api.asynchronous", "zarr.storage": "zarrfast.storage",
          "zarr.codecs": "zarrfast.codecs", "zarr.errors": "zarrfast.errors",
          "zarr.dtype": "zarrfast.dtype", "zarr.abc.store": "zarrfast.storage"}


def exported(module: types.ModuleType) -> dict[str, object]:
    """A module's public names: its ``__all__``, else what does not start with ``_``."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return {n: getattr(module, n) for n in names if hasattr(module, n)}


DEFAULT_FILES = ("test_array.py", "test_group.py", "test_indexing.py", "test_attributes.py")
WIDER_FILES = ("test_api.py", "test_api", "test_properties.py", "test_metadata", "test_codecs",
               "test_dtype")
MODE = os.environ.get("DROPIN_MODE")  # set in the pytest process only
OUT = os.environ.get("DROPIN_OUT")


# ----------------------------------------------------------------------------- the alias
class Missing:
    """Stands for a public zarr-python name zarrfast does not have: any use fails."""

    def __init__(self, qualname: str) -> None:
        object.__setattr__(self, "_qualname", qualname)

    def _fail(self, *args, **kwargs):
        raise AttributeError(f"zarrfast has no {self._qualname}")

    __call__ = __getattr__ = __getitem__ = __iter__ = __mro_entries__ = _fail

    def __repr__(self) -> str:
        return f"<missing in zarrfast: {self._qualname}>"


class AliasModule(types.ModuleType):
    """``zarr.<x>`` served by ``zarrfast.<x>``; names only zarr-python has are Missing."""

    def __init__(self, name: str, target: types.ModuleType | None, real: types.ModuleType,
                 aliases: dict[str, types.ModuleType]) -> None:
        super().__init__(name)
        self.__dict__["_target"] = target
        self.__dict__["_real"] = real
        self.__dict__["_aliases"] = aliases
        self.__dict__["__path__"] = []  # a package, so that `import zarr.x` resolves

    def __getattr__(self, attr: str):
        if attr == "__all__":  # the public names: zarrfast's (tests iterate over them)
            for module in (self._target, self._real):
                if module is not None and hasattr(module, "__all__"):
                    return module.__all__
        if attr.startswith("__"):
            raise AttributeError(attr)
        sub = f"{self.__name__}.{attr}"
        if sub in self._aliases:
            return self._aliases[sub]
        target = self._target
        if target is not None and hasattr(target, attr):
            return getattr(target, attr)
        if isinstance(getattr(self._real, attr, None), types.ModuleType):
            return getattr(self._real, attr)  # an internal subpackage: stays zarr-python's
        if hasattr(self._real, attr):
            return Missing(sub)
        raise AttributeError(f"module {self.__name__!r} (zarrfast) has no attribute {attr!r}")

    def __dir__(self):
        return sorted(set(dir(self._real)) | set(dir(self._target or object())))


def install_alias() -> dict[int, tuple[str, str]]:
    """Import zarr-python whole, then point its public modules at zarrfast.

    Returns ``id(real public object) -> (public module, name)`` for rebinding.
    """
    import zarr

    for info in pkgutil.walk_packages(zarr.__path__, "zarr."):
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - optional parts (gpu) need what is not installed
            pass
    public_ids: dict[int, tuple[str, str]] = {}
    reals = {name: importlib.import_module(name) for name in PUBLIC}
    for name, module in reals.items():
        for attr, value in exported(module).items():
            if not isinstance(value, types.ModuleType | int | str):
                public_ids.setdefault(id(value), (name, attr))
    aliases: dict[str, types.ModuleType] = {}
    for name, real in reals.items():
        try:
            target = importlib.import_module(PUBLIC[name])
        except ImportError:
            target = None
        aliases[name] = AliasModule(name, target, real, aliases)
    sys.modules.update(aliases)
    return public_ids


# ------------------------------------------------------------------ which tests are public
class NameUse(ast.NodeVisitor):
    """Names and ``zarr.<x>`` chains a definition uses, annotations left out."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.chains: set[str] = set()

    def visit_arg(self, node: ast.arg) -> None:
        pass  # its annotation only

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_FunctionDef(self, node) -> None:
        for dec in node.decorator_list:
            self.visit(dec)
        self.visit(node.args)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_arguments(self, node: ast.arguments) -> None:
        for default in [*node.defaults, *node.kw_defaults]:
            if default is not None:
                self.visit(default)

    def visit_Name(self, node: ast.Name) -> None:
        self.names.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts = []
        cur: ast.AST = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id == "zarr":
            self.chains.add(".".join(["zarr", *reversed(parts)]))
        self.generic_visit(node)


def uses(node: ast.AST) -> NameUse:
    visitor = NameUse()
    visitor.visit(node)
    return visitor


def chain_is_internal(chain: str) -> bool:
    """``zarr.core.x``, ``zarr.testing``...: a chain through a module that is not public."""
    parts = chain.split(".")
    for i in range(2, len(parts) + 1):
        head = ".".join(parts[:i])
        if head in PUBLIC:
            continue
        module = sys.modules.get(head)
        return isinstance(module, types.ModuleType) and not isinstance(module, AliasModule)
    return False


def internal_names(tree: ast.Module, namespace: dict, public_ids: dict) -> set[str]:
    """Module-level names that only zarr-python's internals provide."""
    internal: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == "zarr" or node.module.startswith("zarr.")):
            if node.module in PUBLIC:
                continue
            for alias in node.names:
                local = alias.asname or alias.name
                value = namespace.get(local)
                if value is None or id(value) not in public_ids:
                    internal.add(local)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name.startswith("zarr.") and alias.name not in PUBLIC:
                    internal.add(alias.asname)
    for node in tree.body:  # module-level constants built from internals
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            use = uses(node.value)
            if use.names & internal or any(map(chain_is_internal, use.chains)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                internal.update(t.id for t in targets if isinstance(t, ast.Name))
    return internal


class Classifier:
    def __init__(self, public_ids: dict[int, tuple[str, str]]) -> None:
        self.public_ids = public_ids
        self.modules: dict[str, set[str]] = {}

    def tainted(self, module: types.ModuleType) -> set[str]:
        key = module.__name__
        if key not in self.modules:
            try:
                tree = ast.parse(inspect.getsource(module))
            except (OSError, TypeError):
                tree = ast.Module(body=[], type_ignores=[])
            self.modules[key] = internal_names(tree, vars(module), self.public_ids)
        return self.modules[key]

    def is_public(self, item) -> bool:
        module = item.module
        tainted = self.tainted(module)
        nodes: list[ast.AST] = []
        try:
            nodes.append(ast.parse(textwrap.dedent(inspect.getsource(item.function))))
            cls = getattr(item, "cls", None)
            if cls is not None:  # the class's decorators (its parametrisation), not its body
                nodes.extend(ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
                             .decorator_list)
        except (OSError, TypeError, SyntaxError):
            return False
        for node in nodes:
            use = uses(node)
            if use.names & tainted or any(map(chain_is_internal, use.chains)):
                return False
        return True


def rebind(module: types.ModuleType, public_ids: dict[int, tuple[str, str]]) -> None:
    """Public zarr-python objects in a module's globals, and in the attributes of the
    classes it defines (``test_cls = Int8`` in a test class), -> zarrfast's (alias) ones."""
    for name, value in list(vars(module).items()):
        hit = public_ids.get(id(value))
        if hit is not None:
            setattr(module, name, getattr(sys.modules[hit[0]], hit[1]))
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in list(vars(value).items()):
                hit = public_ids.get(id(member))
                if hit is not None:
                    setattr(value, attr, getattr(sys.modules[hit[0]], hit[1]))


def rebind_params(item, public_ids: dict[int, tuple[str, str]]) -> None:
    """Public zarr-python objects among a test's parameters (``parametrize("cls",
    [Int8, ...])`` with ``Int8`` imported from an internal path) -> zarrfast's."""
    callspec = getattr(item, "callspec", None)
    for name, value in list(getattr(callspec, "params", {}).items()):
        hit = public_ids.get(id(value))
        if hit is not None:
            callspec.params[name] = getattr(sys.modules[hit[0]], hit[1])


# ------------------------------------------------------------------- the pytest plugin
if MODE:
    _PUBLIC_IDS = install_alias() if MODE == "zarrfast" else {}
    if MODE == "zarr":
        import zarr as _zarr  # noqa: F401 - the same import order as the alias

        for _name in PUBLIC:
            for _attr, _value in exported(importlib.import_module(_name)).items():
                if not isinstance(_value, types.ModuleType | int | str):
                    _PUBLIC_IDS.setdefault(id(_value), (_name, _attr))
    _CLASSIFIER = Classifier(_PUBLIC_IDS)
    _RESULTS: dict[str, dict] = {}

    def pytest_collection_modifyitems(session, config, items) -> None:
        seen = set()
        for item in items:
            public = _CLASSIFIER.is_public(item)
            _RESULTS[item.nodeid] = {"public": public, "outcome": "not run", "reason": ""}
            if MODE == "zarrfast":
                rebind_params(item, _PUBLIC_IDS)
            if MODE == "zarrfast" and id(item.module) not in seen:
                seen.add(id(item.module))
                rebind(item.module, _PUBLIC_IDS)
        for module in list(sys.modules.values()):
            if (MODE == "zarrfast" and isinstance(getattr(module, "__file__", None), str)
                    and os.path.basename(module.__file__) == "conftest.py"
                    and id(module) not in seen):
                seen.add(id(module))
                rebind(module, _PUBLIC_IDS)

    def pytest_runtest_logreport(report) -> None:
        entry = _RESULTS.setdefault(report.nodeid,
                                    {"public": False, "outcome": "not run", "reason": ""})
        if report.when == "call" or report.outcome != "passed":
            if entry["outcome"] in ("not run", "passed"):
                entry["outcome"] = report.outcome if report.when == "call" else (
                    "error" if report.outcome == "failed" else report.outcome)
                if report.outcome != "passed":
                    entry["reason"] = reason_of(report)

    def pytest_sessionfinish(session, exitstatus) -> None:
        Path(OUT).write_text(json.dumps(_RESULTS))


def reason_of(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0][:200] if crash.message else ""
    if isinstance(report.longrepr, tuple):  # a skip: (file, line, reason)
        return str(report.longrepr[2])[:200]
    return str(report.longrepr).strip().splitlines()[-1][:200] if report.longrepr else ""


# -------------------------------------------------------------------------- the runner
def run(mode: str, checkout: Path, files: list[str], workdir: Path, timeout: float) -> dict:
    out = workdir / f"{mode}.json"
    env = dict(os.environ, DROPIN_MODE=mode, DROPIN_OUT=str(out),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent),
                                           os.environ.get("PYTHONPATH", "")]))
    # --tb=line: a test that fails by deep recursion once made pytest's source-formatting of
    # its traceback crash the whole session (CPython 3.11's "AST constructor recursion depth
    # mismatch"); the reasons reported come from each report's crash line anyway
    # --continue-on-collection-errors: a test module that cannot be imported (a missing
    # test dependency, or with zarrfast a missing module) costs its own tests, not the run's
    cmd = [sys.executable, "-m", "pytest", "-p", Path(__file__).stem, "-q", "--no-header",
           "--tb=line", "--continue-on-collection-errors",
           "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
           "-o", "asyncio_default_fixture_loop_scope=function", "-o", "xfail_strict=true",
           "--rootdir", str(checkout), "-c", os.devnull,
           *[str(checkout / "tests" / f) for f in files]]
    log = workdir / f"{mode}.log"
    with log.open("w") as fh:
        try:
            subprocess.run(cmd, cwd=workdir, env=env, stdout=fh, stderr=subprocess.STDOUT,
                           timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            print(f"{mode}: pytest timed out after {timeout} s (see {log})", file=sys.stderr)
    if not out.exists():
        tail = log.read_text().splitlines()[-15:]
        raise SystemExit(f"{mode}: pytest wrote no results; the end of {log}:\n"
                         + "\n".join(tail))
    return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="zarr-python's source (holding tests/)")
    parser.add_argument("--files", nargs="+", default=None,
                        help="files or folders under tests/ (default: the public-API tests)")
    parser.add_argument("--wider", action="store_true",
                        help="run the wider set: " + ", ".join(WIDER_FILES))
    parser.add_argument("--show", type=int, default=25,
                        help="how many failure reasons to list (most common first)")
    parser.add_argument("--list", action="store_true",
                        help="list every public test that fails with zarrfast")
    parser.add_argument("--keep", type=Path, help="keep the logs and results in this folder")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--reuse-zarr", action="store_true",
                        help="with --keep: reuse the zarr-python run kept there, if any")
    args = parser.parse_args()
    if args.files is None:
        args.files = list(WIDER_FILES if args.wider else DEFAULT_FILES)
    elif args.wider:
        parser.error("--wider and --files exclude each other")
    with tempfile.TemporaryDirectory(prefix="dropin-tests-") as tmp:
        args.checkout = source_of(args.checkout, tmp + "/source")
        check_version(args.checkout)
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        kept = workdir / "zarr.json"
        if args.reuse_zarr and args.keep and kept.exists():
            ref = json.loads(kept.read_text())
        else:
            ref = run("zarr", args.checkout.resolve(), args.files, workdir, args.timeout)
        got = run("zarrfast", args.checkout.resolve(), args.files, workdir, args.timeout)
    public = [n for n, r in ref.items() if r["public"]]
    judged = [n for n in public if ref[n]["outcome"] == "passed"]
    passed = [n for n in judged if got.get(n, {}).get("outcome") == "passed"]
    failing = [n for n in judged if n not in passed]
    per_file = collections.Counter(n.split("::")[0] for n in judged)
    per_file_ok = collections.Counter(n.split("::")[0] for n in passed)
    print(f"tests collected: {len(ref)}; public-API only: {len(public)}; "
          f"of those passing with zarr-python: {len(judged)}")
    for name, count in sorted(per_file.items()):
        print(f"  {name}: {per_file_ok[name]} of {count} pass with zarrfast")
    share = 100.0 * len(passed) / len(judged) if judged else 0.0
    print(f"public tests passing with zarrfast: {len(passed)} of {len(judged)} ({share:.1f}%)")
    reasons = collections.Counter(
        (got.get(n, {}).get("outcome", "not collected"), got.get(n, {}).get("reason", ""))
        for n in failing)
    if reasons and args.show:
        print(f"\nthe {min(args.show, len(reasons))} most common reasons among {len(failing)}:")
        for (outcome, reason), count in reasons.most_common(args.show):
            print(f"  {count:5d}  {outcome}: {reason}")
    if args.list:
        for n in failing:
            print(f"FAIL {n}: {got.get(n, {}).get('reason', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Imports flow one way: down the layers below, and never in a cycle.

The table ``LAYERS`` is the map of the code, top to bottom. A module may
import modules of its own layer or of a layer below it, never above, and no
chain of imports may lead back to where it started, even within a layer.
The runtime, ``dnnc_runtime``, stands beside the layers: it imports nothing
of dnnc and no MLIR, and only the driver (and what is above it) imports it.

Nothing is imported here: every ``.py`` file under ``dnnc/`` and
``runtime/dnnc_runtime/`` is read with ``ast``, and every ``import`` and
``from ... import`` in it (inside functions too) is resolved to the module it
loads:

* ``import a.b`` loads ``a.b``; ``from a import b`` loads ``a.b`` when that is
  a module, else ``a`` (``b`` is a name defined in ``a``: ``from dnnc import
  __version__`` loads the package ``dnnc``); relative imports resolve against
  the importing file's package.
* Loading ``a.b`` runs ``a/__init__.py`` first; that implicit import of a
  parent package is not an edge (Python always does it, whoever imports).

A new module must be given a layer here before the test passes.
"""

import ast
import os
from collections import namedtuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Where each package's sources live: (package, directory that holds it).
PACKAGES = [("dnnc", ROOT), ("dnnc_runtime", os.path.join(ROOT, "runtime"))]

# The layers, top to bottom. ``name`` is that module; ``name.**`` is that
# package and every module under it. The most specific entry places a module.
LAYERS = [
    ("entry points", [
        "dnnc",                 # the package __init__: a facade (Graph, errors, __version__)
        "dnnc.cli",             # dnnc compile / run / inspect / tune
        "dnnc.opt",             # dnnc-opt
    ]),
    ("user-facing API", [
        "dnnc.graph",           # dnnc.Graph: graph building
        "dnnc.graph_attention",  # sdpa's masks, lengths and page tables checked
        "dnnc.graph_text",      # print(graph); the inputs no op reads
        "dnnc.graph_mlir",      # Graph <-> dnn MLIR
        "dnnc.frontend.**",     # cudnn-frontend's Python API, lowered to dnnc.Graph
        "dnnc.torch.**",        # torch.library ops, modules on dnnc graphs (imports torch)
    ]),
    ("compiler driver", [
        "dnnc.jit",             # Graph.compile(target="cuda"): autotune, cache, runtime
        "dnnc.compiler",        # Options, compile_module, compile_cuda, the cache lookup
        "dnnc.tune.tuner",      # times each kernel's top configs
        "dnnc.tune.measure",    # runs a package on the GPU for the tuner
        "dnnc.targets.**",      # the cpu and cuda back ends
        "dnnc.stages",          # the stage loop, run_stages, and its IR dumps
        "dnnc.pipelines",       # the stages and their passes, as data
        "dnnc.cache",           # the JIT's on-disk cache
        "dnnc.interpreter",     # runs a dnn module with the NumPy reference
        "dnnc.plan",            # the launch plan of a fused module
        "dnnc.parsing",         # dnn MLIR text -> verified module
    ]),
    ("passes", [
        "dnnc.passes.**",       # one pass per file; the registry and pipeline runner
    ]),
    ("kernel configs and rewrite rules", [
        "dnnc.heuristics.**",   # ranked kernel configs
        "dnnc.tune",            # the package __init__ (imports nothing)
        "dnnc.tune.db",         # the tuning database dnn-configure reads
        "dnnc.tune.entry",      # a database entry's config
        "dnnc.tune.signature",  # a kernel's database key
        "dnnc.decompose.**",    # composite ops -> primitive ones
    ]),
    ("code generation", [
        "dnnc.codegen.**",      # linalg lowerings, GPU kernel builders, PTX and SASS tools
    ]),
    ("dialect and IR utilities", [
        "dnnc.dialect.**",      # the dnn dialect; walk.py: walking a module, its graph function
        "dnnc.reference",       # the NumPy oracle
        "dnnc.compute_types",   # what a convolution or matmul multiplies in by default
        "dnnc.reference_attention",  # its attention part
        "dnnc.artifact",        # the .dnnpkg package
        "dnnc.archs",           # the GPU architectures dnnc compiles for
        "dnnc.errors",
        "dnnc.env",             # every DNNC_* variable
        "dnnc.atomic_file",
        "dnnc._bootstrap",      # loads libLLVM.so before the bindings
        "dnnc.version",         # __version__
    ]),
]

RUNTIME = "dnnc_runtime"
# The lowest layer (1-based) that may import the runtime: the driver.
RUNTIME_USERS = 3
# What the runtime must not import: dnnc, and the MLIR bindings.
NOT_IN_RUNTIME = ("dnnc", "mlir")

Edge = namedtuple("Edge", "importer imported path line")


# -----------------------------------------------------------------------------
# Reading the imports


def find_modules(packages):
    """{module name: file path} of every .py file of ``packages``
    ([(package, directory holding it)])."""
    modules = {}
    for package, base in packages:
        for directory, dirs, files in os.walk(os.path.join(base, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                path = os.path.join(directory, f)
                parts = os.path.relpath(path, base)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts.pop()
                modules[".".join(parts)] = path
    return modules


def _package_of(module, path):
    """The package relative imports in ``module`` resolve against."""
    if os.path.basename(path) == "__init__.py":
        return module
    return module.rpartition(".")[0]


def imports(module, path, modules):
    """[(module loaded, line)] for every import statement of ``module``.
    Names outside ``modules`` are kept as written (``mlir.ir``, ``os``)."""
    tree = ast.parse(open(path).read(), filename=path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package_of(module, path).split(".")
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub if sub in modules else base, node.lineno))
    return found


def import_graph(packages=PACKAGES):
    """(modules, edges): every module of ``packages`` and every import of one
    of them (Edge), to any module, in file and line order."""
    modules = find_modules(packages)
    edges = []
    for module, path in modules.items():
        for imported, line in imports(module, path, modules):
            edges.append(Edge(module, imported, os.path.relpath(path, ROOT), line))
    return modules, edges


def _internal(name, packages):
    return any(name == p or name.startswith(p + ".") for p, _ in packages)


# -----------------------------------------------------------------------------
# The checks, each returning its failures as lines


def unresolved(modules, edges, packages=PACKAGES):
    """Imports of a name under one of ``packages`` that no file holds."""
    return [f"{e.path}:{e.line}: {e.importer} imports {e.imported}, which is no module"
            for e in edges if _internal(e.imported, packages) and e.imported not in modules]


def cycles(modules, edges):
    """One cycle per strongly connected set of modules: its modules and, for
    each step, the import (file:line) that makes it."""
    succ = {m: {} for m in modules}
    for e in edges:
        if e.imported in modules and e.imported != e.importer:
            succ[e.importer].setdefault(e.imported, e)
    failures = []
    for component in _strongly_connected(succ):
        if len(component) < 2:
            continue
        start = min(component)
        path = _shortest_path(succ, component, start)
        steps = [succ[a][b] for a, b in zip(path, path[1:])]
        lines = [f"import cycle: {' -> '.join(path)}"]
        lines += [f"    {e.path}:{e.line}: {e.importer} imports {e.imported}" for e in steps]
        if len(component) > len(path) - 1:
            lines.append(f"    (modules in this cycle set: {', '.join(sorted(component))})")
        failures.append("\n".join(lines))
    return failures


def _strongly_connected(succ):
    """Tarjan's algorithm, iterative: the strongly connected components."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in sorted(succ):
        if root in index:
            continue
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(succ[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    out.append(component)
    return out


def _shortest_path(succ, component, start):
    """The shortest path start -> ... -> start inside ``component`` (BFS)."""
    previous = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(succ[node]):
                if child not in component:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1] + [start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is on no cycle of its component")


def layer_of(module, layers=LAYERS):
    """(1-based layer number, layer name) of ``module``, None when no entry
    places it. The most specific entry wins: an exact name, else the deepest
    ``package.**``."""
    best = None
    for number, (name, entries) in enumerate(layers, start=1):
        for entry in entries:
            if entry.endswith(".**"):
                package = entry[:-3]
                if module != package and not module.startswith(package + "."):
                    continue
                rank = package.count(".") + 1
            elif module == entry:
                rank = float("inf")
            else:
                continue
            if best is None or rank > best[0]:
                best = (rank, number, name)
    return None if best is None else best[1:]


def unplaced(modules, layers=LAYERS, runtime=RUNTIME):
    """Modules (outside the runtime) that no entry of ``layers`` places."""
    return [f"{path}: module {m} is in no layer: add it to LAYERS in test_imports.py"
            for m, path in sorted(modules.items())
            if not _internal(m, [(runtime, None)]) and layer_of(m, layers) is None]


def upward(modules, edges, layers=LAYERS, runtime=RUNTIME, runtime_users=RUNTIME_USERS):
    """Imports of a module of a higher layer than the importer's, and imports
    of the runtime below the layer ``runtime_users``."""
    failures = []
    for e in edges:
        if e.imported not in modules or _internal(e.importer, [(runtime, None)]):
            continue
        importer = layer_of(e.importer, layers)
        if importer is None:
            continue  # reported by unplaced
        if _internal(e.imported, [(runtime, None)]):
            if importer[0] > runtime_users:
                failures.append(
                    f"{e.path}:{e.line}: {e.importer} (layer {importer[0]}, {importer[1]}) "
                    f"imports the runtime {e.imported}: only layers 1-{runtime_users} may")
            continue
        imported = layer_of(e.imported, layers)
        if imported is not None and imported[0] < importer[0]:
            failures.append(
                f"{e.path}:{e.line}: {e.importer} (layer {importer[0]}, {importer[1]}) "
                f"imports {e.imported} (layer {imported[0]}, {imported[1]}), a higher layer")
    return failures


def runtime_imports(edges, runtime=RUNTIME, forbidden=NOT_IN_RUNTIME):
    """Imports of dnnc or MLIR by the runtime."""
    return [f"{e.path}:{e.line}: {e.importer} imports {e.imported}: the runtime imports "
            f"neither {' nor '.join(forbidden)}"
            for e in edges if _internal(e.importer, [(runtime, None)])
            and _internal(e.imported, [(p, None) for p in forbidden])]


def _report(failures):
    return "\n" + "\n".join(failures)


# -----------------------------------------------------------------------------
# The code base


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_every_import_resolves(graph):
    failures = unresolved(*graph)
    assert not failures, _report(failures)


def test_no_import_cycles(graph):
    failures = cycles(*graph)
    assert not failures, _report(failures)


def test_every_module_has_a_layer(graph):
    modules, _ = graph
    failures = unplaced(modules)
    assert not failures, _report(failures)


def test_imports_go_down_the_layers(graph):
    failures = upward(*graph)
    assert not failures, _report(failures)


def test_the_runtime_imports_neither_dnnc_nor_mlir(graph):
    modules, edges = graph
    assert any(_internal(m, [(RUNTIME, None)]) for m in modules), "no runtime modules found"
    failures = runtime_imports(edges)
    assert not failures, _report(failures)


def test_the_table_names_only_modules_that_exist(graph):
    modules, _ = graph
    stale = [entry for _, entries in LAYERS for entry in entries
             if not any(layer_of(m, [("", [entry])]) for m in modules)]
    assert not stale, f"LAYERS names modules that do not exist: {', '.join(stale)}"


# -----------------------------------------------------------------------------
# The checker, on a small package made up here


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_checker_resolves_every_form(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from pkg.low import VALUE\n",
        "pkg/low.py": "import os\nVALUE = 1\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/a.py": ("from . import b\nfrom .b import name\nfrom .. import low\n"
                         "from pkg import VALUE\nimport pkg.sub.b\n"
                         "def f():\n    from ..low import VALUE\n"),
        "pkg/sub/b.py": "name = 1\n",
    })
    modules, edges = import_graph([("pkg", str(tmp_path))])
    got = sorted((e.importer, e.imported, e.line) for e in edges if e.importer == "pkg.sub.a")
    assert got == [("pkg.sub.a", "pkg", 4), ("pkg.sub.a", "pkg.low", 3),
                   ("pkg.sub.a", "pkg.low", 7), ("pkg.sub.a", "pkg.sub.b", 1),
                   ("pkg.sub.a", "pkg.sub.b", 2), ("pkg.sub.a", "pkg.sub.b", 5)]
    assert ("pkg", "pkg.low") in {(e.importer, e.imported) for e in edges}
    assert ("pkg.low", "os") in {(e.importer, e.imported) for e in edges}
    # Importing pkg.sub.b runs pkg/__init__.py and pkg/sub/__init__.py: no edge.
    assert not cycles(modules, edges)


def test_checker_finds_a_cycle_an_upward_import_and_a_stray_module(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top.py": "from pkg import low\n",
        "pkg/low.py": "\n\ndef f():\n    from pkg.top import g\n",
        "pkg/stray.py": "",
        "pkg/ghost.py": "import pkg.missing\n",
    })
    layers = [("top", ["pkg", "pkg.top", "pkg.ghost"]), ("low", ["pkg.low"])]
    modules, edges = import_graph([("pkg", str(tmp_path))])
    (cycle,) = cycles(modules, edges)
    assert cycle.splitlines() == [
        "import cycle: pkg.low -> pkg.top -> pkg.low",
        f"    {os.path.relpath(tmp_path / 'pkg' / 'low.py', ROOT)}:4: pkg.low imports pkg.top",
        f"    {os.path.relpath(tmp_path / 'pkg' / 'top.py', ROOT)}:1: pkg.top imports pkg.low",
    ]
    (up,) = upward(modules, edges, layers)
    assert up.endswith(":4: pkg.low (layer 2, low) imports pkg.top (layer 1, top), "
                       "a higher layer")
    (stray,) = unplaced(modules, layers)
    assert "module pkg.stray is in no layer" in stray
    (ghost,) = unresolved(modules, edges, [("pkg", None)])
    assert ghost.endswith(":1: pkg.ghost imports pkg.missing, which is no module")


def test_checker_keeps_the_runtime_apart(tmp_path):
    _write(tmp_path / "a", {"pkg/__init__.py": "", "pkg/low.py": "import rt\n"})
    _write(tmp_path / "b", {"rt/__init__.py": "from . import core\n",
                            "rt/core.py": "import mlir.ir\nfrom pkg import low\n"})
    layers = [("top", ["pkg"]), ("low", ["pkg.low"])]
    modules, edges = import_graph([("pkg", str(tmp_path / "a")), ("rt", str(tmp_path / "b"))])
    assert [f.split(": ", 1)[1] for f in runtime_imports(edges, "rt", ("pkg", "mlir"))] == [
        "rt.core imports mlir.ir: the runtime imports neither pkg nor mlir",
        "rt.core imports pkg.low: the runtime imports neither pkg nor mlir",
    ]
    (up,) = upward(modules, edges, layers, runtime="rt", runtime_users=1)
    assert "pkg.low (layer 2, low) imports the runtime rt: only layers 1-1 may" in up
    assert not unplaced(modules, layers, runtime="rt")

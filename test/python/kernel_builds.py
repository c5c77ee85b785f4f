"""Compiled packages and what ptxas and the disassembler make of them, for
the tests that read kernels' plans, PTX and SASS without a GPU.

* ``Builds``: each graph compiled at most once per (name, arch, config
  override), and assembled (``ptxas.assemble_cubin``) and disassembled
  (``sass.functions``) at most once each, only when a test first asks. A
  module-scoped fixture holds one, so that the tests of a file share the
  work.
* ``needs_ptxas`` / ``needs_sass``: skip marks that say what is missing
  (ptxas; cuobjdump and nvdisasm).
* The checks the tests share, each over a list of a package's kernels: no
  spills or stack (``assert_no_spills``), registers and shared memory
  within budget (``assert_fit``, ``assert_shared_fit``), no local memory
  in the SASS (``assert_no_local_memory``), setmaxnreg within the block's
  registers (``assert_setmaxnreg_fits``); and over a kernel's opcodes
  (``sass.opcodes``), those of an instruction family (``family``: the
  HGMMA or HMMA shapes it issues) and its atomics (``atomics``).

Checked by test_kernel_builds.py.

Usage::

    @pytest.fixture(scope="module")
    def built():
        return Builds(lambda name: CASES[name](), ARCH)

    def test_sass(built, name):
        package = built.package(name)
        resources, functions = built.assembly(name)
        assert_fit(package.kernels, resources, MAX_SHARED)
        assert_no_local_memory(package.kernels, functions)
        counts = sass.opcodes(functions[package.kernels[0]["entry"]])
        assert family(counts, "HGMMA.") == {"HGMMA.64x128x16.F32.BF16"}, sorted(counts)
"""

import re

import pytest

from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import ptxas, sass

PTXAS_MISSING = None if ptxas.find() else (
    "no ptxas: set DNNC_PTXAS, pip install nvidia-cuda-nvcc, or put ptxas on PATH")
needs_ptxas = pytest.mark.skipif(PTXAS_MISSING is not None, reason=str(PTXAS_MISSING))
needs_sass = pytest.mark.skipif(
    PTXAS_MISSING is not None or sass.missing() is not None,
    reason=str(PTXAS_MISSING or sass.missing()))


def _override(name, config):
    return config


class Builds:
    """Packages compiled for target ``cuda`` at most once per (name, arch,
    config override), each assembled and disassembled at most once, when
    first asked for.

    ``graph(name)`` makes the ``dnnc.Graph`` of a name. ``arch`` is the
    arch a name is compiled for when a call names none (a string, or a
    function of the name). ``config(name, override)`` gives the
    ``compiler.Options.config`` string of an override (by default the
    override itself), so that a file may spell overrides its own way.
    ``options`` are the other ``compiler.Options`` fields: no tuning
    database unless one is given (``tuning_db=None``: the arch's default).
    """

    def __init__(self, graph, arch, config=_override, tuning_db="off", **options):
        self._graph, self._arch, self._config = graph, arch, config
        self._options = dict(options, tuning_db=tuning_db)
        self._packages, self._cubins, self._functions = {}, {}, {}

    def _key(self, name, arch, config):
        if arch is None:
            arch = self._arch(name) if callable(self._arch) else self._arch
        return name, arch, config

    def package(self, name, arch=None, config=None):
        """The compiled package of ``name`` for ``arch`` (None: the default
        arch) with config override ``config``."""
        key = self._key(name, arch, config)
        if key not in self._packages:
            self._packages[key] = compiler.compile_module(
                graph_mlir.to_module(self._graph(name)),
                compiler.Options(target="cuda", arch=key[1], config=self._config(name, config),
                                 **self._options),
                basename=name)
        return self._packages[key]

    def resources(self, name, arch=None, config=None):
        """({entry: ptxas.KernelResources}, cubin bytes) of the package,
        assembled for its arch."""
        key = self._key(name, arch, config)
        if key not in self._cubins:
            self._cubins[key] = ptxas.assemble_cubin(self.package(*key).ptx, key[1])
        return self._cubins[key]

    def sass(self, name, arch=None, config=None):
        """{entry: SASS text} of the package's cubin."""
        key = self._key(name, arch, config)
        if key not in self._functions:
            self._functions[key] = sass.functions(sass.disassemble(self.resources(*key)[1]))
        return self._functions[key]

    def assembly(self, name, arch=None, config=None):
        """({entry: ptxas.KernelResources}, {entry: SASS text})."""
        return self.resources(name, arch, config)[0], self.sass(name, arch, config)


def threads(kernel):
    """The threads of a kernel's block."""
    x, y, z = kernel["block"]
    return x * y * z


def register_budget(kernel, most=None):
    """The registers a thread of ``kernel`` may have: 65536 a block shared
    by its threads, allocated 8 at a time (168 for 384 threads); at most
    ``most`` where given (255 on sm_80)."""
    budget = 65536 // threads(kernel) // 8 * 8
    return budget if most is None else min(most, budget)


def assert_no_spills(kernels, resources):
    """ptxas spilled nothing of each kernel: no spill stores or loads, no
    stack."""
    for k in kernels:
        r = resources[k["entry"]]
        assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (k["entry"], r)


def assert_shared_fit(kernels, resources, max_shared):
    """Each kernel's dynamic shared memory (manifest) plus its static
    (ptxas) within ``max_shared`` bytes."""
    for k in kernels:
        r = resources[k["entry"]]
        assert k["shared_bytes"] + r.shared_bytes <= max_shared, (k["shared_bytes"], r)


def assert_fit(kernels, resources, max_shared=None, most_registers=None):
    """ptxas's verdict on each kernel: no spills or stack, registers within
    ``register_budget`` and (given ``max_shared``) shared memory within
    ``max_shared`` bytes."""
    assert_no_spills(kernels, resources)
    for k in kernels:
        r = resources[k["entry"]]
        assert 0 < r.registers <= register_budget(k, most_registers), (k["entry"], r)
    if max_shared is not None:
        assert_shared_fit(kernels, resources, max_shared)


def assert_no_local_memory(kernels, functions):
    """No local-memory load or store (LDL / STL) in each kernel's SASS."""
    for k in kernels:
        counts = sass.opcodes(functions[k["entry"]])
        assert counts["LDL"] == counts["STL"] == 0, (k["entry"], counts["LDL"], counts["STL"])


def assert_setmaxnreg_fits(kernels, resources, functions):
    """Each kernel's warpgroups reallocate registers (USETMAXREG, from
    setmaxnreg) within what its block holds at entry: ptxas's register
    count times the block's threads is the block's pool, one warpgroup (the
    producer) gives back down to its DEALLOC count and the others each
    take up to their TRY_ALLOC count, which waits until the pool holds it;
    asked for more, a warpgroup waits forever (the kernel hangs)."""
    pattern = re.compile(
        r"USETMAXREG\.(DEALLOC|TRY_ALLOC)\.CTAPOOL\s+(?:UP\d+,\s*)?(0x[0-9a-f]+|\d+)")
    for k in kernels:
        found = pattern.findall(functions[k["entry"]])
        counts = {what: max(int(v, 0) for w, v in found if w == what) for what, _ in found}
        if not counts:
            continue
        warpgroups = threads(k) // 128
        asked = 128 * (counts.get("DEALLOC", 0) + counts.get("TRY_ALLOC", 0) * (warpgroups - 1))
        pool = resources[k["entry"]].registers * threads(k)
        assert asked <= pool, (k["entry"], counts, f"{asked} registers asked, the block "
                               f"holds {pool}")


def family(counts, prefix):
    """The opcodes of ``counts`` (``sass.opcodes``) that start with
    ``prefix``: ``family(counts, "HGMMA.")`` is every wgmma shape and type
    a kernel issues."""
    return {op for op in counts if op.startswith(prefix)}


def atomics(counts):
    """The atomic and reduction opcodes of ``counts`` (ATOM, ATOMG, RED,
    REDG, with any suffix)."""
    return {op for op in counts if op.split(".")[0] in ("ATOM", "ATOMG", "RED", "REDG")}

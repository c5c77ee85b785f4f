"""The compiler driver: compile a dnn module for a target.

``compile_module`` runs the target's pipeline (dnnc/pipelines.py) through the
stage loop (dnnc/stages.py, which also writes each stage's IR when asked to
dump) and hands the result to the target's back end (dnnc/targets/).

For target ``cuda`` it also holds the entry points above that:
``compile_cuda`` (ahead of time, through the on-disk cache of dnnc/cache.py)
and ``lookup``, the cache read it and the JIT (dnnc/jit.py) use, which for a
graph imports no MLIR.

What the driver compiles is a graph, a dnn-level ``mlir.ir.Module`` or dnn
MLIR text. A graph is any object with the three members of ``GraphLike``;
``dnnc.Graph`` is one. The driver does not import the graph API, which
imports it: it calls the graph's own ``serialize`` and ``to_module``.
"""

import hashlib
import json
import os
from dataclasses import dataclass, fields
from typing import Protocol

from dnnc.archs import ARCHS
from dnnc.errors import UnsupportedError

TARGETS = ("cpu", "cuda")
# How kernel configs are chosen: the heuristics' first choice (or the tuning
# database's entry), or autotuning the kernels the database lacks first.
MODES = ("heuristic", "autotune")


@dataclass(frozen=True)
class Options:
    """Compilation options; frozen so that they hash into cache keys.

    ``arch`` is the GPU architecture of target ``cuda`` (``sm_80``,
    ``sm_90a``); it has no default: the JIT fills it in from the device.
    ``config`` overrides the heuristics' kernel configs (target ``cuda``):
    ``KERNEL=block:128[;KERNEL=...]``, see dnnc/heuristics/override.py.
    ``tuning_db`` is the tuning database file whose configs the kernels get
    (dnnc/tune/db.py; None: $DNNC_TUNING_DB, else ``tuning.json`` in the
    cache directory; ``"off"``: none), ``gpu`` the GPU whose entries to
    prefer (the JIT fills it in from the device; None: any of the arch).
    Not the path but a digest of the database's entries for the arch goes
    into the cache key (``key_fields``). ``cubin`` (target ``cuda``): put
    the cubin ptxas makes beside the PTX when ptxas is found (None: unless
    DNNC_CUBIN is ``0``; dnnc/targets/cuda.py).
    """

    target: str = "cpu"
    dump_ir: str = None
    stop_after: str = None
    arch: str = None
    config: str = None
    tuning_db: str = None
    gpu: str = None
    cubin: bool = None

    def __post_init__(self):
        if self.target not in TARGETS:
            raise UnsupportedError(f"target '{self.target}': expected one of "
                                   f"{', '.join(TARGETS)}")
        if self.arch is not None and self.target != "cuda":
            raise UnsupportedError(f"option arch='{self.arch}' applies to target 'cuda', "
                                   f"not '{self.target}'")
        if self.config and self.target != "cuda":
            raise UnsupportedError(f"option config='{self.config}' applies to target 'cuda', "
                                   f"not '{self.target}'")
        for name in ("tuning_db", "gpu", "cubin"):
            if getattr(self, name) is not None and self.target != "cuda":
                raise UnsupportedError(f"option {name}='{getattr(self, name)}' applies to "
                                       f"target 'cuda', not '{self.target}'")
        if self.arch is not None and self.arch not in ARCHS:
            raise UnsupportedError(f"arch '{self.arch}': expected one of "
                                   f"{', '.join(ARCHS)}")

    # Fields that say where to write or read things, not what to compile.
    NOT_IN_KEY = ("dump_ir", "tuning_db")

    def key_fields(self):
        """The fields that decide the compiled output, as a JSON-ready dict
        (what the cache key hashes). Every field is a str or None, so it
        serializes the same way in every process, unlike ``hash()`` of a
        str, which Python salts per process. For target cuda, ``tuning`` is
        the digest of the tuning database's entries for the arch (None: no
        database, or none for the arch): tuning again changes the key.
        Reading it costs one stat (and a read when the file changed).
        ``cubin`` is "off" when no cubin is made (the option, or
        DNNC_CUBIN=0), else None: a package compiled without one is not
        the entry of a compile that asks for one. Whether ptxas was found
        is not in the key: an entry compiled where it was not has PTX only."""
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in self.NOT_IN_KEY}
        if self.target == "cuda":
            out["cubin"] = None if self.cubin_enabled() else "off"
            from dnnc.tune import db

            out["tuning"] = db.digest(db.resolve(self.tuning_db), self.arch)
        return out

    def cubin_enabled(self):
        """Whether a cuda compile makes a cubin: the option, else DNNC_CUBIN."""
        if self.target != "cuda":
            return False
        if self.cubin is not None:
            return bool(self.cubin)
        from dnnc import env

        return env.cubin_enabled()

    def tuning_path(self):
        """The tuning database file the configured stage reads ("" when
        there is none: off, or no file yet)."""
        from dnnc.tune import db

        path = db.resolve(self.tuning_db) if self.target == "cuda" else None
        return path if path and os.path.exists(path) else ""

    def hash(self):
        """A stable sha256 hex digest of ``key_fields``."""
        text = json.dumps(self.key_fields(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def stages(self):
        """The pipeline of this target (and arch)."""
        # Imported here: a JIT cache hit makes no pipeline (see compile_or_load).
        from dnnc import pipelines

        if self.target == "cuda":
            if self.arch is None:
                raise UnsupportedError("target 'cuda' needs an arch: expected one of "
                                       f"{', '.join(ARCHS)}, got none")
            return pipelines.get("cuda", self.arch, config=self.config or "",
                                 db=self.tuning_path(), gpu=self.gpu or "")
        return pipelines.get(self.target)


class GraphLike(Protocol):
    """A graph, as the driver sees one (``dnnc.Graph`` is one).

    ``name`` names the module's IR dumps (``<name>.fused.mlir``);
    ``serialize()`` is the canonical text the JIT cache keys the graph on,
    made without MLIR (a cache hit imports none); ``to_module()`` is the
    graph as a dnn-level ``mlir.ir.Module``, in a new context, made on every
    call (the driver lowers it in place)."""

    name: str

    def serialize(self) -> str: ...

    def to_module(self): ...


def is_graph(value):
    """Whether ``value`` is a graph (GraphLike). Read on every JIT cache
    lookup: two attribute tests, where isinstance of a runtime-checkable
    protocol costs some 9 µs, half a graph's serialization."""
    return hasattr(value, "serialize") and hasattr(value, "to_module")


def compile_module(module, options=Options(), basename="graph"):
    """Compile a dnn-level module. Returns an executable for the target (for
    ``cuda``, a ``dnnc.artifact.Package``: manifest, PTX, source and
    ``save(path)``), or the module itself when ``options.stop_after`` names a
    stage."""
    from dnnc.stages import run_stages

    stages = options.stages()
    if options.stop_after:
        run_stages(module, stages, dump_ir=options.dump_ir, basename=basename,
                   stop_after=options.stop_after)
        return module
    if options.target == "cpu":
        from dnnc.targets import cpu

        front = [s for s in stages if s.name in ("dnn", "decomposed", "fused")]
        run_stages(module, front, dump_ir=options.dump_ir, basename=basename)
        return cpu.compile_module(module, dump_ir=options.dump_ir, basename=basename)
    if options.target == "cuda":
        from dnnc.targets import cuda

        return cuda.compile_module(module, options.arch, dump_ir=options.dump_ir,
                                     basename=basename, config=options.config or "",
                                     db=options.tuning_path(), gpu=options.gpu or "",
                                     cubin=options.cubin_enabled())
    raise UnsupportedError(f"target '{options.target}' is not available")


def compile_graph(graph, target="cpu", **options):
    """``Graph.compile``: lower ``graph`` (a GraphLike) and return the
    target's executable."""
    from dnnc import env

    options.setdefault("dump_ir", env.dump_ir_dir())
    opts = Options(target=target, **options)
    return compile_module(graph.to_module(), opts, basename=graph.name)


# -- CUDA: the GPU, and compiling through the cache ---------------------------

# Compute capability -> the arch whose PTX that GPU runs. sm_90a code uses
# Hopper-only features, so it is for exactly 9.0; sm_80 code runs on any 8.x.
def arch_for_capability(major, minor):
    """The arch to compile for a GPU of compute capability ``major.minor``."""
    if (major, minor) == (9, 0):
        return "sm_90a"
    if major == 8:
        return "sm_80"
    raise UnsupportedError(
        f"GPU of compute capability {major}.{minor}: expected 8.x (arch sm_80) or 9.0 "
        f"(arch sm_90a); supported archs are {', '.join(ARCHS)}")


NO_DEVICE = "no CUDA device found: pass arch= to compile ahead of time, or use target='cpu'"


def detect_arch():
    """The arch of the current GPU: the device of the calling thread's current
    context, else device 0, read through cuda-python's driver API (the
    runtime's thin layer). UnsupportedError when there is no usable GPU or
    its compute capability is not supported."""
    return detect_gpu()[0]


def detect_gpu():
    """(arch, name) of the current GPU, as ``detect_arch`` finds it; the name
    (``NVIDIA H200``) is None when the driver does not say."""
    try:
        from dnnc_runtime import DnncRuntimeError
        from dnnc_runtime import cuda
    except ImportError as err:
        raise UnsupportedError(f"{NO_DEVICE} (dnnc_runtime cannot be imported: {err})") from None
    try:
        cuda.init()
        d = cuda.driver()
        index = cuda.current_device_index()
        if index is None:
            if cuda.call(d.cuDeviceGetCount) == 0:
                raise UnsupportedError(NO_DEVICE)
            index = 0
        device = cuda.call(d.cuDeviceGet, index)
        attr = d.CUdevice_attribute
        major = cuda.call(d.cuDeviceGetAttribute,
                          attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
        minor = cuda.call(d.cuDeviceGetAttribute,
                          attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    except DnncRuntimeError as err:
        raise UnsupportedError(f"{NO_DEVICE} ({err})") from None
    arch = arch_for_capability(int(major), int(minor))
    try:
        raw = cuda.call(d.cuDeviceGetName, 256, device)
        name = bytes(raw).split(b"\0", 1)[0].decode(errors="replace").strip() or None
    except (DnncRuntimeError, AttributeError, TypeError):  # a name is a preference only
        name = None
    return arch, name


def dnn_module(graph_or_module):
    """(module, basename) of what the driver compiles: a graph (GraphLike:
    its ``to_module()`` and its name), dnn MLIR text (parsed and verified) or
    an mlir.ir.Module (itself)."""
    if is_graph(graph_or_module):
        return graph_or_module.to_module(), graph_or_module.name
    if isinstance(graph_or_module, str):
        from dnnc.parsing import parse_graph  # imports MLIR, which a graph's cache hit does not

        return parse_graph(graph_or_module), "graph"
    return graph_or_module, "graph"


def cache_key(graph_or_module, options):
    """The JIT cache key of compiling ``graph_or_module`` with ``options``
    (Options). A graph is keyed by its ``serialize()``, which needs no MLIR;
    an mlir.ir.Module or dnn MLIR text by the module as printed."""
    from dnnc import cache

    if is_graph(graph_or_module):
        return cache.key_for_graph(graph_or_module, options)
    module, _ = dnn_module(graph_or_module)
    return cache.key_for(str(module), options)


def lookup(graph_or_module, arch, **options):
    """(key, .dnnpkg bytes or None): the cache key of compiling
    ``graph_or_module`` for ``arch`` with ``options`` (further Options
    fields) and the bytes of its entry in the cache, None on a miss. This is
    the cache read of ``compile_cuda`` and the JIT. For a graph it
    imports no MLIR (nor any dnnc module that does): a hit costs a hash of
    the graph's serialization and one file read."""
    from dnnc import cache

    key = cache_key(graph_or_module, Options(target="cuda", arch=arch, **options))
    return key, cache.default().get(key)


def compile_or_read(graph_or_module, arch, cache=True, **options):
    """(Package or None, .dnnpkg bytes) of compiling ``graph_or_module`` for
    ``arch`` with ``options`` (further Options fields): on a cache hit only
    the bytes, read from the entry (and checked: ``cache.Cache.get``); on a
    miss (or without ``cache``) the Package just compiled and its bytes. It
    is ``compile_cuda`` without building a Package on a hit."""
    package, data, _ = _through_cache(graph_or_module, arch, cache, None, options)
    return package, data


def compile_or_load(graph_or_module, arch, cache=True, **options):
    """(dnnc_runtime Executable, .dnnpkg bytes) of compiling
    ``graph_or_module`` for ``arch`` with ``options`` through the cache: what
    the JIT (dnnc/jit.py) and dnnc.frontend's plans run.

    A hit is read and checked once, by the runtime's own artifact reader
    (``cache.Cache.read``): every member read (so every CRC), the manifest
    validated, each cubin's size and sha256 checked; an entry it refuses is
    a miss, compiled again and rewritten, as with ``get``. (Through
    ``compile_or_read`` and ``dnnc_runtime.load`` a hit was checked by the
    cache and then again by the runtime: two zip reads and two sha256 of
    each cubin.) A compile is loaded from its bytes with ``dnnc_runtime.load``."""
    import dnnc_runtime

    _, data, artifact = _through_cache(graph_or_module, arch, cache, _runtime_entry, options)
    if artifact is not None:
        return dnnc_runtime.Executable(artifact), data
    return dnnc_runtime.load(data), data


def _runtime_entry(data):
    """A cache entry read by the runtime (``Cache.read``'s reader): (the
    key its manifest records, its dnnc_runtime Artifact); raises
    ArtifactError for anything wrong with it."""
    from dnnc_runtime import artifact as runtime_artifact

    artifact = runtime_artifact.read(data)
    from dnnc import cache as jit_cache

    return artifact.manifest.get(jit_cache.KEY_FIELD), artifact


def _through_cache(graph_or_module, arch, cache, reader, options):
    """(Package or None, bytes, the reader's value or None): a hit read
    with ``Cache.get`` (``reader`` None) or ``Cache.read(key, reader)``;
    else compiled (and stored with ``cache``)."""
    from dnnc import cache as jit_cache

    opts = Options(target="cuda", arch=arch, **options)
    if not cache:
        module, basename = dnn_module(graph_or_module)
        package = compile_module(module, opts, basename=basename)
        return package, jit_cache.package_bytes(package), None
    if isinstance(graph_or_module, str):  # parsed once, for the key and the compile
        graph_or_module, _ = dnn_module(graph_or_module)
    key = cache_key(graph_or_module, opts)
    store = jit_cache.default()
    if not opts.dump_ir:  # asked for the stages' IR: compile, so that it is written
        if reader is None:
            data = store.get(key)
            if data is not None:
                return None, data, None
        else:
            hit = store.read(key, reader)
            if hit is not None:
                return None, hit[0], hit[1]
    module, basename = dnn_module(graph_or_module)
    package = compile_module(module, opts, basename=basename)
    package.manifest[jit_cache.KEY_FIELD] = key
    data = jit_cache.package_bytes(package)
    try:
        store.put(key, data)
    except OSError as err:  # a read-only or full disk costs the next run a compile, no more
        import warnings

        warnings.warn(f"dnnc cache: cannot write {store.path(key)}: {err}", RuntimeWarning,
                      stacklevel=4)
    return package, data, None


def compile_cuda(graph_or_module, arch, cache=True, **options):
    """Compile a graph (GraphLike), a dnn-level mlir.ir.Module or dnn MLIR text for
    ``arch`` (sm_80, sm_90a; None: the current GPU's) and return the
    ``dnnc.artifact.Package``. Needs no GPU when ``arch`` is given.

    With ``cache`` the result comes from, or goes to, the on-disk cache
    (dnnc/cache.py, $DNNC_CACHE_DIR) through ``lookup``; a hit runs no pass
    and reads one file, and for a graph imports no MLIR: the key comes
    from its ``serialize()``, not from the module. ``options`` are further
    Options fields (``dump_ir``: compile even on a hit so the IR is written;
    ``stop_after``: no caching, the module is returned as compile_module does).
    A module passed in is lowered in place on a miss, as compile_module does.
    """
    if arch is None:
        arch = detect_arch()
    if options.get("stop_after"):
        module, basename = dnn_module(graph_or_module)
        return compile_module(module, Options(target="cuda", arch=arch, **options),
                              basename=basename)
    package, data = compile_or_read(graph_or_module, arch, cache, **options)
    if package is None:
        from dnnc import artifact

        package = artifact.read(data)
    return package


def check_mode(mode, **tuning):
    """Refuse a ``mode`` not in MODES, and autotune options (``tuning``: name
    -> value, None when not given) with mode heuristic."""
    if mode not in MODES:
        raise UnsupportedError(f"mode '{mode}': expected one of {', '.join(MODES)}")
    given = [name for name, value in tuning.items() if value is not None]
    if given and mode != "autotune":
        raise UnsupportedError(f"option {given[0]} applies to mode 'autotune', not '{mode}'")

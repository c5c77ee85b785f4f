"""The autotuner: time the heuristics' top configs of each kernel, keep the fastest.

    report = Tuner("sm_90a", top=4, progress=print).tune(graph)
    report.results[0].winner          # Candidate: config, override text, ms

1. List the kernels (``kernels``): compile the graph to the fused stage, and
   for each kernel function read its Problem, its strides (its signature,
   the database key) and the configs ``heuristics.rank`` gives, best first.
   A kernel is tuned when it has more than one config, no config written in
   the input IR, no user override, and (unless ``retune``) no database entry
   for this GPU. Kernels with one signature are tuned once.
2. For each such kernel, compile the whole graph once per candidate (the top
   ``top`` configs) with that kernel's config overridden
   (``KERNEL=strategy:...,block:...``, dnnc/heuristics/override.py) and the
   tuning database off. A candidate that fails to compile, to run, or whose
   outputs differ from the heuristics' first choice (``measure.mismatch``) is
   skipped, with the reason recorded.
3. Time each one (``timer``: by default ``measure.time_kernels``, the runtime's
   ``Executable.time`` on random non-zero inputs) and keep the kernel's own
   time: the other kernels do not change between candidates.
4. Record the fastest in the tuning database (dnnc/tune/db.py), written after
   each kernel, so an interrupted run keeps what it measured.

``timer(package, inputs) -> {kernel name: ms}``, ``runner(package, inputs)
-> [outputs]`` (None: no output check) and ``compile(source, arch, config)
-> Package`` are fields, so tests tune without a GPU. ``progress`` gets a
``Progress`` before each candidate's compile and after its timing. Library
code: it never prints.
"""

import time
from dataclasses import dataclass, field

from dnnc import compiler, heuristics
from dnnc.errors import UnsupportedError
from dnnc.heuristics import override as override_mod
from dnnc.heuristics.config import ATTR
from dnnc.tune import db as db_mod, entry as entry_mod, measure, signature as sig_mod
from dnnc.version import __version__

DEFAULT_TOP = 4


@dataclass
class Kernel:
    """One kernel function of the fused stage, as the tuner sees it."""

    name: str
    problem: object          # heuristics.Problem
    signature: dict          # signature.signature(problem, layout)
    digest: str              # signature.digest(signature): the database key's last part
    configs: list            # heuristics.rank(problem), best first
    fixed: bool = False      # a config written in the input IR (dnn-configure keeps it)

    @property
    def summary(self):
        return sig_mod.summary(self.problem)


@dataclass
class Candidate:
    """One config tried: ``ms`` when timed, else ``skipped`` says why."""

    config: object           # heuristics.Config
    text: str                # its override fields (entry.config_text)
    ms: float = None
    skipped: str = None
    ran: str = None          # the strategy the compiled kernel used, when not config's

    def record(self):
        out = {"config": self.text}
        if self.ms is not None:
            out["ms"] = round(self.ms, 6)
        if self.skipped:
            out["skipped"] = self.skipped
        if self.ran:
            out["ran"] = self.ran
        return out


@dataclass
class Result:
    """What tuning one kernel gave: ``winner`` is None when no candidate ran."""

    kernel: Kernel
    candidates: list
    winner: Candidate = None
    key: str = None          # its database key, when recorded

    @property
    def heuristic(self):
        return self.candidates[0] if self.candidates else None


@dataclass
class Report:
    """The kernels tuned, and why the others were not (name -> why)."""

    results: list = field(default_factory=list)
    not_tuned: dict = field(default_factory=dict)
    elapsed: float = 0.0
    db_path: str = None
    gpu: str = None          # the GPU tuned on, as entries record it


@dataclass
class Progress:
    """A tuning step: kernel ``kernel`` of ``kernels`` (1-based), candidate
    ``candidate`` of ``candidates``; ``phase`` is "compile" (before it is
    compiled), "timed" (``ms`` set) or "skipped" (``note`` says why);
    ``elapsed`` seconds since tuning began."""

    kernel: int
    kernels: int
    name: str
    candidate: int
    candidates: int
    config: str
    phase: str
    elapsed: float
    ms: float = None
    note: str = None


def _source(graph_or_module):
    """Something compile_cuda can compile again and again: a graph
    (``compiler.GraphLike``), or MLIR text (a module would be lowered in
    place)."""
    if compiler.is_graph(graph_or_module) or isinstance(graph_or_module, str):
        return graph_or_module
    return str(graph_or_module)


def kernels(graph_or_module, arch):
    """The Kernels of ``graph_or_module`` (a dnnc.Graph, dnn MLIR text or
    module) compiled for ``arch``, in the fused stage's order."""
    from dnnc.codegen.gpu import irutil

    module, _ = compiler.dnn_module(_source(graph_or_module))
    compiler.compile_module(module, compiler.Options(target="cuda", arch=arch,
                                                     stop_after="fused", tuning_db="off"))
    layouts = sig_mod.kernel_layouts(module)
    out = []
    with module.context:
        for fn in irutil.kernel_functions(module):
            name = irutil.symbol(fn)
            problem = heuristics.problem_of(fn, arch)
            signature = sig_mod.signature(problem, layouts.get(name))
            out.append(Kernel(name, problem, signature, sig_mod.digest(signature),
                              heuristics.rank(problem), fixed=ATTR in fn.attributes))
    return out


def compile_candidate(source, arch, config):
    """The default ``compile``: the graph for ``arch`` with override ``config``,
    no JIT cache, no tuning database."""
    return compiler.compile_cuda(source, arch, cache=False, config=config, tuning_db="off")


def _why(err):
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:300]


def _ran(package, name, config):
    """The strategy kernel ``name`` was compiled with, when a lowering pass
    fell back from ``config``'s (None when it kept it)."""
    for k in package.manifest.get("kernels", ()):
        if k.get("name") == name and k.get("strategy") and k["strategy"] != config.strategy:
            return k["strategy"]
    return None


@dataclass
class Tuner:
    """Tunes the kernels of graphs for ``arch`` on the current GPU; see the
    module docstring. ``db`` is the database file (None: the default,
    $DNNC_TUNING_DB or tuning.json in the cache directory). ``config`` is
    the user's override: the kernels it names are not tuned."""

    arch: str
    gpu: str = None
    top: int = DEFAULT_TOP
    db: str = None
    retune: bool = False
    config: str = None
    progress: object = None
    timer: object = measure.time_kernels
    runner: object = measure.run
    compile: object = compile_candidate
    clock: object = time.perf_counter

    def __post_init__(self):
        if not isinstance(self.top, int) or self.top < 1:
            raise UnsupportedError(f"autotune top: expected a positive number of candidates, "
                                   f"got {self.top!r}")
        self.db_path = db_mod.resolve(self.db)
        if self.db_path is None:
            raise UnsupportedError("autotune needs a tuning database to write: got "
                                   f"'{db_mod.OFF}' (set DNNC_TUNING_DB to a file)")
        self._overrides = override_mod.parse(self.config or "")

    def plan(self, graph_or_module, listed=None):
        """(kernels to tune, {name: why not} of the others); ``listed`` is
        ``kernels(graph_or_module, arch)`` when already made."""
        database = db_mod.load(self.db_path)
        todo, skipped, seen = [], {}, {}
        if listed is None:
            listed = kernels(graph_or_module, self.arch)
        for k in listed:
            if k.fixed:
                skipped[k.name] = "config given in the input IR"
            elif override_mod.fields_for(self._overrides, k.name):
                skipped[k.name] = "user override"
            elif len(k.configs) < 2:
                skipped[k.name] = f"one config ({k.configs[0]})"
            elif k.digest in seen:
                skipped[k.name] = f"the same problem as {seen[k.digest]}"
            elif not self.retune and database.has(self.arch, k.digest, self.gpu):
                skipped[k.name] = f"in the tuning database ({self.db_path})"
            else:
                seen[k.digest] = k.name
                todo.append(k)
        return todo, skipped

    def tune(self, graph_or_module):
        """Tune the kernels of ``graph_or_module`` (dnnc.Graph, dnn MLIR text
        or module); return a Report. Entries are written as they are found."""
        start = self.clock()
        if self.gpu is None:
            self.gpu = measure.gpu_name()
        source = _source(graph_or_module)
        listed = kernels(source, self.arch)
        todo, skipped = self.plan(source, listed)
        # Inputs of ops that want them positive are drawn positive everywhere.
        self._positive = any(op in measure.POSITIVE_OPS for k in listed for op in k.problem.ops)
        report = Report(not_tuned=skipped, db_path=self.db_path, gpu=self.gpu)
        for i, kernel in enumerate(todo):
            result = self._tune_kernel(source, kernel, i + 1, len(todo), start)
            if result.winner is not None:
                database = db_mod.load(self.db_path)
                result.key = database.put(self._entry(result))
                database.save()
            report.results.append(result)
        report.elapsed = self.clock() - start
        return report

    def _tune_kernel(self, source, kernel, index, count, start):
        best = kernel.configs[0]
        configs = kernel.configs[:self.top]
        candidates = [Candidate(c, entry_mod.config_text(c)) for c in configs]
        inputs = want = None

        def tell(j, phase, **more):
            if self.progress is not None:
                self.progress(Progress(index, count, kernel.name, j + 1, len(candidates),
                                       str(candidates[j].config), phase,
                                       self.clock() - start, **more))

        for j, cand in enumerate(candidates):
            tell(j, "compile")
            try:
                if override_mod.apply(best, entry_mod.fields_of(cand.text)) != cand.config:
                    raise UnsupportedError("no override text gives this config")
                package = self.compile(source, self.arch, f"{kernel.name}={cand.text}")
                cand.ran = _ran(package, kernel.name, cand.config)
                if inputs is None:
                    inputs = measure.random_inputs(package.manifest,
                                                   positive=getattr(self, "_positive", False))
                if self.runner is not None:
                    got = self.runner(package, inputs)
                    if want is None:
                        want = got
                    else:
                        bad = measure.mismatch(package.manifest, got, want)
                        if bad:
                            raise UnsupportedError(f"wrong results: {bad}")
                times = self.timer(package, inputs)
                if kernel.name not in times:
                    raise UnsupportedError(f"no launch of {kernel.name} was timed")
                cand.ms = float(times[kernel.name])
            except Exception as err:  # noqa: BLE001 - any failure skips the candidate, noted
                cand.skipped = _why(err)
                tell(j, "skipped", note=cand.skipped)
                continue
            tell(j, "timed", ms=cand.ms)
        timed = [c for c in candidates if c.ms is not None]
        # The fastest; on a tie the better ranked (min keeps the first).
        winner = min(timed, key=lambda c: c.ms) if timed else None
        return Result(kernel, candidates, winner)

    def _entry(self, result):
        kernel, won, first = result.kernel, result.winner, result.heuristic
        heuristic = {"config": first.text}
        if first.ms is not None:
            heuristic["ms"] = round(first.ms, 6)
        else:
            heuristic["skipped"] = first.skipped
        return {
            "arch": self.arch, "gpu": self.gpu or "unknown", "signature": kernel.digest,
            "problem": kernel.signature, "summary": kernel.summary,
            "config": won.text, "ms": round(won.ms, 6), "heuristic": heuristic,
            "candidates": [c.record() for c in result.candidates],
            "kernel": kernel.name, "date": db_mod.now(), "dnnc": __version__,
        }


def autotune(graph_or_module, arch, **options):
    """``Tuner(arch, **options).tune(graph_or_module)``: the Report."""
    return Tuner(arch, **options).tune(graph_or_module)

"""The stage loop: run a pipeline of ``dnnc.pipelines`` stage by stage.

Stages are data (``dnnc/pipelines.py``); this module only walks them, writing
each stage's IR as ``<name>.<stage>.mlir`` when asked to dump, and hands the
result to the target's back end.
"""

import os
from dataclasses import dataclass, field

from dnnc import pipelines
from dnnc.errors import GraphError, UnsupportedError

TARGETS = ("cpu", "cuda")


@dataclass(frozen=True)
class Options:
    """Compilation options; frozen so that they hash into cache keys.

    ``arch`` is the GPU architecture of target ``cuda`` (``sm_80``,
    ``sm_90a``); it has no default: the JIT fills it in from the device.
    """

    target: str = "cpu"
    dump_ir: str = None
    stop_after: str = None
    arch: str = None

    def __post_init__(self):
        if self.target not in TARGETS:
            raise UnsupportedError(f"target '{self.target}': expected one of "
                                   f"{', '.join(TARGETS)}")
        if self.arch is not None and self.target != "cuda":
            raise UnsupportedError(f"option arch='{self.arch}' applies to target 'cuda', "
                                   f"not '{self.target}'")
        if self.arch is not None and self.arch not in pipelines.ARCHS:
            raise UnsupportedError(f"arch '{self.arch}': expected one of "
                                   f"{', '.join(pipelines.ARCHS)}")

    def stages(self):
        """The pipeline of this target (and arch)."""
        if self.target == "cuda":
            if self.arch is None:
                raise UnsupportedError("target 'cuda' needs an arch: expected one of "
                                       f"{', '.join(pipelines.ARCHS)}, got none")
            return pipelines.get("cuda", self.arch)
        return pipelines.get(self.target)


@dataclass
class StageResult:
    """The module after each stage that ran, by stage name (texts)."""

    module: object
    stages: list = field(default_factory=list)


def run_stages(module, stages, *, dump_ir=None, basename="graph", stop_after=None):
    """Run ``stages`` on ``module`` in place; return the names of the stages run."""
    from dnnc import passes

    ran = []
    if dump_ir:
        os.makedirs(dump_ir, exist_ok=True)
        _write(dump_ir, f"{basename}.input.mlir", module)
    for stage in stages:
        passes.run_pipeline(module, stage.pipeline)
        ran.append(stage.name)
        if dump_ir:
            _write_stage(dump_ir, basename, stage, module)
        if stop_after == stage.name:
            break
    if stop_after and stop_after not in ran:
        names = ", ".join(s.name for s in stages)
        raise GraphError(f"unknown stage '{stop_after}': expected one of {names}")
    return ran


def _write(directory, name, module):
    with open(os.path.join(directory, name), "w") as f:
        f.write(str(module))


def _write_stage(directory, basename, stage, module):
    name = f"{basename}{stage.dump_extension}"
    if stage.dump_extension == ".ptx":  # the stage's product is the PTX text
        from dnnc.codegen.gpu import ptx

        with open(os.path.join(directory, name), "w") as f:
            f.write(ptx.extract(module))
        return
    _write(directory, name, module)


def compile_module(module, options=Options(), basename="graph"):
    """Compile a dnn-level module. Returns an executable for the target (for
    ``cuda``, a ``dnnc.artifact.Package``: manifest, PTX, source and
    ``save(path)``), or the module itself when ``options.stop_after`` names a
    stage."""
    stages = options.stages()
    if options.stop_after:
        run_stages(module, stages, dump_ir=options.dump_ir, basename=basename,
                   stop_after=options.stop_after)
        return module
    if options.target == "cpu":
        from dnnc import cpu

        front = [s for s in stages if s.name in ("dnn", "decomposed", "fused")]
        run_stages(module, front, dump_ir=options.dump_ir, basename=basename)
        return cpu.compile_module(module, dump_ir=options.dump_ir, basename=basename)
    if options.target == "cuda":
        from dnnc.codegen.gpu import driver

        return driver.compile_module(module, options.arch, dump_ir=options.dump_ir,
                                     basename=basename)
    raise UnsupportedError(f"target '{options.target}' is not available")


def compile_graph(graph, target="cpu", **options):
    """``Graph.compile``: lower the graph and return the target's executable."""
    from dnnc import env, graph_mlir

    options.setdefault("dump_ir", env.dump_ir_dir())
    opts = Options(target=target, **options)
    return compile_module(graph_mlir.to_module(graph), opts, basename=graph.name)

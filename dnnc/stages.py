"""The stage loop: run a pipeline of ``dnnc.pipelines`` stage by stage.

    ran = run_stages(module, pipelines.get("cpu"), dump_ir="out", basename="mlp")

Stages are data (``dnnc/pipelines.py``); this module only walks them, writing
each stage's IR as ``<basename><stage extension>`` (``mlp.fused.mlir``; the
``ptx`` stage's dump is the PTX text, ``mlp.ptx``) when asked to dump. The
driver (dnnc/compiler.py) and the back ends (dnnc/targets/) run their stages
through it.
"""

import os

from dnnc.errors import GraphError


def run_stages(module, stages, *, dump_ir=None, basename="graph", stop_after=None):
    """Run ``stages`` on ``module`` in place; return the names of the stages run."""
    # Imported here, as the PTX reader below: the driver imports this module
    # on a JIT cache hit too, which runs no pass.
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

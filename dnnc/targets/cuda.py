"""Compile a dnn module for an NVIDIA GPU into a ``dnnc.artifact.Package``.

    package = compile_module(module, arch="sm_90a")
    package.save("graph.dnnpkg")

1. Read the graph's inputs and outputs (names, dims, declared strides, element
   types) from the dnn-level graph function, and keep its text for the
   artifact.
2. Run the ``cuda`` pipeline (dnnc/pipelines.py) up to the ``gpu`` stage;
   extract the launch plan from the host code (host_plan.extract), which does
   not change after that stage.
3. Run the ``nvvm`` and ``ptx`` stages; read the PTX back; refuse external
   calls; check every launch against the PTX entries and launch limits;
   mark the launches whose kernel waits for the grids ahead
   (``dependent_launch``: dnn-grid-dependency).
4. Where ptxas is found (and ``cubin`` is on: DNNC_CUBIN is not ``0``),
   assemble the PTX for the arch into the cubin the package carries beside
   it, so that a GPU of exactly that arch loads machine code instead of
   having its driver compile the PTX (``make_cubins``). A ptxas that
   refuses the PTX (one older than the PTX ISA it is written in, say) leaves
   the package with its PTX only, and says so in a warning: the driver may
   still load it.
"""

import warnings

from mlir import ir

from dnnc import artifact, env, pipelines
from dnnc.codegen.gpu import host_plan, irutil, ptx, ptxas
from dnnc.dialect.walk import BY_VALUE
from dnnc.errors import LoweringError, ToolError
from dnnc.stages import run_stages


def signature(module):
    """(graph name, inputs, outputs) as artifact.tensor_entry dicts."""
    with module.context:
        fn = irutil.graph_function(module)
        ftype = irutil.function_type(fn)
        inputs = [_entry(fn, "arg_attrs", i, t, "input")
                  for i, t in enumerate(ftype.inputs)]
        outputs = [_entry(fn, "res_attrs", i, t, "output")
                   for i, t in enumerate(ftype.results)]
        return irutil.symbol(fn), inputs, outputs


def _entry(fn, key, index, type_, prefix):
    t = ir.RankedTensorType(type_)
    dims = list(t.shape)
    name, strides = f"{prefix}{index}", irutil.row_major_strides(dims)
    if key in fn.attributes:
        attrs = ir.DictAttr(ir.ArrayAttr(fn.attributes[key])[index])
        if "dnn.name" in attrs:
            name = ir.StringAttr(attrs["dnn.name"]).value
        if "dnn.strides" in attrs:
            strides = irutil.int_list(attrs["dnn.strides"])
        if BY_VALUE in attrs:
            return artifact.tensor_entry(name, dims, strides, str(t.element_type),
                                         by_value=True)
    return artifact.tensor_entry(name, dims, strides, str(t.element_type))


def make_cubins(text, arch):
    """(manifest entries, {member: bytes}) of the cubin ptxas makes of the
    PTX ``text`` for ``arch``; none where no ptxas is found, or where it
    refuses the PTX (then with a RuntimeWarning that carries its messages)."""
    tool = ptxas.find()
    if tool is None:
        return [], {}
    try:
        _, data = ptxas.assemble_cubin(text, arch, ptxas=tool, threads=env.ptxas_threads())
    except ToolError as err:
        warnings.warn(f"no cubin in the package, PTX only: {err}", RuntimeWarning, stacklevel=3)
        return [], {}
    entry = artifact.cubin_entry(arch, data, ptxas.version(tool))
    return [entry], {entry["file"]: data}


def compile_module(module, arch, dump_ir=None, basename="graph", config="", db="", gpu="",
                   cubin=None):
    """Lower ``module`` (dnn level) in place for ``arch``, with the config
    override ``config`` (dnnc/heuristics/override.py) and the tuning
    database file ``db`` of GPU ``gpu`` (dnnc/tune/db.py); return the
    Package, with a cubin beside the PTX when ``cubin`` (None:
    DNNC_CUBIN is not ``0``) and ptxas is found."""
    source = str(module)
    graph, inputs, outputs = signature(module)
    stages = pipelines.get("cuda", arch, config=config, db=db, gpu=gpu)
    names = [s.name for s in stages]
    split = names.index("gpu") + 1
    run_stages(module, stages[:split], dump_ir=dump_ir, basename=basename)
    plan = host_plan.extract(module, len(inputs))
    run_stages(module, stages[split:], dump_ir=dump_ir, basename=basename)
    text = ptx.extract(module)
    external = ptx.external_calls(text)
    if external:
        raise LoweringError(f"the PTX calls functions it does not define: "
                            f"{', '.join(external)} (a math op reached libdevice?)")
    host_plan.check(plan, ptx.entries(text))
    waiting = ptx.waiting_entries(text)
    for kernel in plan["kernels"]:
        if kernel["entry"] in waiting:
            kernel["dependent_launch"] = True
    if cubin is None:
        cubin = env.cubin_enabled()
    # A plan without kernels (every output empty) loads no module: no cubin.
    make = cubin and plan["kernels"]
    entries, cubins = make_cubins(text, arch) if make else ([], {})
    manifest = artifact.build_manifest(graph, arch, inputs, outputs, plan, entries)
    return artifact.Package(manifest, text, source, cubins)

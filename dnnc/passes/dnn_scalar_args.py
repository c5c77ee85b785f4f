"""dnn-scalar-args: a runtime scalar reaches the kernels as an f32 kernel
parameter, not as a pointer to device memory.

A runtime scalar (``Graph.scalar``) is a rank-0 f32 argument of the graph
function marked ``dnn.by_value``; after bufferization it is a
``memref<f32>`` that the graph function passes to the kernel functions
that read it. Its value lives in the caller's Python float, not on the
device: the runtime has no buffer to point at. This pass, run before
gpu-kernel-outlining, gives each kernel function one load of the scalar
on the host side (at its entry) and makes every load inside its launches
use that value; outlining then passes the f32 to the ``gpu.func`` as a
parameter (``.param .f32`` in the PTX), and the host plan records it as a
``scalar_input`` argument read from the input (dnnc/codegen/gpu/host_plan.py).
The kernel function's argument is marked ``dnn.by_value`` too.

A load through a view of the scalar (a strategy's broadcast of it as a
``memref<1x1xf32>`` epilogue operand) reads that one element too, and is
replaced the same way. A strategy that reads the scalar any other way (a
vector load, a copy, a pointer into a kernel builder) cannot take it as a
parameter: ScalarArgumentError (an UnsupportedError) names the kernel, its
anchor, the scalar and the op, so that a caller can compile the value in
instead (dnnc.frontend does).

Before::

    func.func private @main_k0(%x: memref<64xf32>, %s: memref<f32>, %y: memref<64xf32>) {
      gpu.launch ... {
        %v = memref.load %s[] : memref<f32>
        ...
      }
    }
    func.func @main(%x: memref<64xf32>, %s: memref<f32> {dnn.by_value}, %y: ...) {
      call @main_k0(%x, %s, %y) : ...
    }

After::

    func.func private @main_k0(%x: memref<64xf32>, %s: memref<f32> {dnn.by_value}, ...) {
      %v = memref.load %s[] : memref<f32>
      gpu.launch ... {
        ... (uses %v)
      }
    }

Lit test: test/lit/passes/dnn_scalar_args.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.host_plan import VIEWS
from dnnc.dialect.walk import BY_VALUE, by_value_arguments
from dnnc.errors import ScalarArgumentError
from dnnc.passes import DnncPass, register


def _arg_name(fn, index):
    if "arg_attrs" in fn.attributes:
        attrs = ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[index])
        if "dnn.name" in attrs:
            return ir.StringAttr(attrs["dnn.name"]).value
    return f"input{index}"


def _scalar_arguments(graph):
    """{(kernel function name, argument position): scalar name} for every
    argument of a kernel function that a call of the graph function feeds
    with a by-value graph argument."""
    args = list(irutil.body(graph).arguments)
    names = {args[i]: _arg_name(graph, i) for i in by_value_arguments(graph)}
    found = {}
    for call in irutil.ops(graph, "func.call"):
        callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
        for position, operand in enumerate(call.operands):
            if operand in names:
                found[(callee, position)] = names[operand]
    return found


def _mark(fn, index):
    """Add ``dnn.by_value`` to argument ``index`` of ``fn``."""
    count = len(irutil.function_type(fn).inputs)
    old = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) if "arg_attrs" in fn.attributes \
        else [ir.DictAttr.get({}) for _ in range(count)]
    entries = {ir.DictAttr(old[index])[i].name: ir.DictAttr(old[index])[i].attr
               for i in range(len(ir.DictAttr(old[index])))}
    entries[BY_VALUE] = ir.UnitAttr.get()
    old[index] = ir.DictAttr.get(entries)
    fn.attributes["arg_attrs"] = ir.ArrayAttr.get(old)


def _anchor(fn):
    if "dnn.anchor" in fn.attributes:
        return ir.StringAttr(fn.attributes["dnn.anchor"]).value
    return "kernel"


def hoist(fn, index, scalar):
    """Load argument ``index`` of kernel function ``fn`` (runtime scalar
    ``scalar``) once at the function's entry, and read that value wherever
    the function loaded it. Raises ScalarArgumentError for any other use."""
    arg = irutil.body(fn).arguments[index]
    loads, views = [], []
    todo = [arg]
    while todo:
        source = todo.pop()
        for use in list(source.uses):
            op = use.owner
            if op.name == "memref.load":
                loads.append(op)
                continue
            if op.name in VIEWS and op.operands[0] == source:
                views.append(op)
                todo.append(op.results[0])
                continue
            raise ScalarArgumentError(
                f"kernel '{irutil.symbol(fn)}' ({_anchor(fn)}): runtime scalar '{scalar}' is "
                f"read by '{op.name}' at {op.location}; expected scalar loads only (the "
                f"strategy {_strategy(fn)!r} cannot take it as a kernel parameter): compile "
                "its value in with Graph.constant instead",
                kernel=irutil.symbol(fn), scalar=scalar)
    if not loads:
        return
    entry = irutil.body(fn)
    first = entry.operations[0]
    with ir.InsertionPoint(first), first.location:
        value = memref.load(arg, [])
    for op in loads:
        op.results[0].replace_all_uses_with(value)
        op.erase()
    # The views are left without uses: erase them, innermost first.
    for op in reversed(views):
        if not list(op.results[0].uses):
            op.erase()
    _mark(fn, index)



def _strategy(fn):
    if irutil.CONFIG_ATTR in fn.attributes:
        config = ir.DictAttr(fn.attributes[irutil.CONFIG_ATTR])
        if "strategy" in config:
            return ir.StringAttr(config["strategy"]).value
    return "simt-generic"


@register
@dataclass
class DnnScalarArgs(DnncPass):
    NAME = "dnn-scalar-args"

    def run(self, module):
        graph = irutil.graph_function(module)
        functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        for (callee, index), scalar in sorted(_scalar_arguments(graph).items()):
            fn = functions.get(callee)
            if fn is not None and len(fn.regions[0].blocks):
                hoist(fn, index, scalar)

"""Convert a ``dnnc.Graph`` to dnn-dialect MLIR and back.

The graph becomes one ``func.func`` marked ``dnn.graph``. Graph inputs are its
arguments and outputs its results, each with its name and physical strides::

    func.func @main(%arg0: tensor<8x64x56x56xbf16> {dnn.name = "x",
                    dnn.strides = array<i64: 200704, 1, 3584, 64>}) -> ...

A runtime scalar (``Graph.scalar``) is a rank-0 f32 argument marked
``dnn.by_value`` (see docs/compiler.md, "Runtime scalars")::

    %arg1: tensor<f32> {dnn.by_value, dnn.name = "eps", dnn.strides = array<i64>}

Op names given in the graph are kept as ``dnn.name`` on the op. Reading the text
back gives a graph that prints to the same text.

This module works on whatever object has the Graph's interface and never
imports dnnc.graph, which imports it: ``to_module`` reads the graph it is
given, and ``from_mlir`` builds one made by the ``new_graph`` it is given.
"""

from mlir import ir

from dnnc import dialect
from dnnc.dialect import builders
from dnnc.dialect.walk import entry_function
from dnnc.dialect.walk import BY_VALUE
from dnnc.errors import GraphError
from dnnc.parsing import parse_graph


def to_module(graph, context=None):
    """The graph as an ``mlir.ir.Module`` (in a new dnnc context unless given)."""
    from mlir.dialects import func

    if not graph.outputs:
        raise GraphError("graph has no outputs: mark at least one tensor with set_output(True)")
    _check_layouts(graph)
    ctx = context or dialect.context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        arg_types = [builders.tensor_type(t.dim, t.data_type) for t in graph.inputs]
        res_types = [builders.tensor_type(t.dim, graph._resolve_dtype(t)) for t in graph.outputs]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp(graph.name, ir.FunctionType.get(arg_types, res_types))
        fn.attributes["dnn.graph"] = ir.UnitAttr.get()
        fn.arg_attrs = ir.ArrayAttr.get([_io_attrs(t) for t in graph.inputs])
        fn.res_attrs = ir.ArrayAttr.get([_io_attrs(t) for t in graph.outputs])
        block = fn.add_entry_block()
        values = {id(t): block.arguments[i] for i, t in enumerate(graph.inputs)}
        with ir.InsertionPoint(block):
            for node in graph.nodes:
                _emit(graph, node, values)
            func.ReturnOp([values[id(t)] for t in graph.outputs])
    return module


def _check_layouts(graph):
    """The inputs' and outputs' strides against the layout rule every path
    shares (dnnc_runtime/layout.py): an output's elements at distinct
    addresses."""
    from dnnc_runtime import layout

    for kind, tensors, output in (("input", graph.inputs, False),
                                  ("output", graph.outputs, True)):
        for t in tensors:
            wrong = layout.problem(t.dim, t.get_stride(), output)
            if wrong:
                raise GraphError(f"{kind} '{t.name}': {wrong}")


def to_mlir(graph):
    """The graph as MLIR text."""
    return str(to_module(graph))


def _io_attrs(t):
    attrs = {
        "dnn.name": ir.StringAttr.get(t.name),
        "dnn.strides": ir.DenseI64ArrayAttr.get(t.get_stride()),
    }
    if getattr(t, "is_by_value", False):
        attrs[BY_VALUE] = ir.UnitAttr.get()
    return ir.DictAttr.get(attrs)


def _emit(graph, node, values):
    if getattr(node, "finish", None) is not None:
        node.finish()
    operands = {}
    for key, value in node.operands.items():
        if isinstance(value, list):
            operands[key] = [values[id(t)] for t in value]
        else:
            operands[key] = values[id(value)] if value is not None else None
    result_types = {r: builders.tensor_type(t.dim, graph._resolve_dtype(t))
                    for r, t in node.results.items()}
    discardable = {}
    if node.explicit_name:
        discardable["dnn.name"] = ir.StringAttr.get(node.name)
    view = builders.create(node.opdef.name, operands, node.attrs, result_types,
                           discardable=discardable)
    for r, t in node.results.items():
        values[id(t)] = view.results[r]


def from_mlir(text, new_graph):
    """The graph of MLIR text holding one graph function (parsed and
    verified). ``new_graph(name)`` makes the empty graph, which is then built
    through its own methods (``tensor``, ``_op``, its tensors' setters):
    ``Graph.from_mlir`` passes ``Graph``."""
    module = parse_graph(text)  # dnn ops only, every output made by one
    with module.context:
        fn = entry_function(module)
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        graph = new_graph(name)
        block = fn.regions[0].blocks[0]
        arg_attrs = _dicts(fn, "arg_attrs", len(block.arguments))
        values = {}
        for i, arg in enumerate(block.arguments):
            info = builders.info_of(arg.type)
            attrs = arg_attrs[i]
            if attrs.get(BY_VALUE):
                t = graph.scalar(name=attrs.get("dnn.name", f"input{i}"), data_type=info.dtype)
            else:
                t = graph.tensor(name=attrs.get("dnn.name", f"input{i}"), dim=info.shape,
                                 stride=attrs.get("dnn.strides"), data_type=info.dtype)
            values[arg] = t
        for op in block.operations:
            if op.operation.name == "func.return":
                returned = list(op.operands)
                break
            _read_node(graph, op, values)
        res_attrs = _dicts(fn, "res_attrs", len(returned))
        for i, v in enumerate(returned):
            t = values[v]  # made by an op: parse_graph checked it
            attrs = res_attrs[i]
            t.set_output(True)
            if "dnn.name" in attrs:
                t.set_name(attrs["dnn.name"])
            if "dnn.strides" in attrs:
                t.set_stride(attrs["dnn.strides"])
    return graph


def _dicts(fn, key, count):
    out = [{} for _ in range(count)]
    if key not in fn.attributes:
        return out
    for i, d in enumerate(fn.attributes[key]):
        if "dnn.name" in d:
            out[i]["dnn.name"] = ir.StringAttr(d["dnn.name"]).value
        if "dnn.strides" in d:
            out[i]["dnn.strides"] = list(ir.DenseI64ArrayAttr(d["dnn.strides"]))
        out[i][BY_VALUE] = BY_VALUE in d
    return out


def _read_node(graph, op, values):
    view = builders.verify(op)
    operands = {}
    for key, v in view.operands.items():
        operands[key] = [values[x] for x in v] if isinstance(v, list) else \
            (values[v] if v is not None else None)
    declared = {r: list(builders.info_of(v.type).shape) for r, v in view.results.items()
                if v is not None and r in view.opdef.declared_results}
    name = view.discardable.get("dnn.name")
    name = ir.StringAttr(name).value if name is not None else None
    outs = graph._op(view.name, operands, view.attrs, name, declared)
    for r, t in zip(view.opdef.results, outs):
        if t is None:
            continue
        # Keep the element type the text states, so printing gives it back.
        t.data_type = builders.info_of(view.results[r.name].type).dtype
        values[view.results[r.name]] = t

"""A kernel's canonical problem signature: what the tuning database keys on.

    layouts = kernel_layouts(module)          # fused stage: strides per kernel
    sig = signature(problem, layouts[name])   # JSON-ready dict
    key = digest(sig)                         # 32 hex digits

The signature is built from a ``heuristics.Problem``'s fields, never from the
kernel's name (``Problem.kernel`` holds the graph's name) nor the ops' names
(the ``dnn.name`` attribute), so one problem in two graphs has one
signature::

    {"anchor": "matmul", "ops": ["matmul", "add", "relu"],
     "inputs":  [{"shape": [2048, 2048], "dtype": "bf16", "strides": [1, 2048]}, ...],
     "outputs": [{"shape": [2048, 2048], "dtype": "bf16", "strides": [2048, 1]}],
     "anchor_inputs": [...], "anchor_outputs": [...],
     "attrs": [["compute_type", "f32"]]}

A Problem has no strides: ``kernel_layouts`` reads them from the fused
module's graph function, where a kernel argument is a graph input (its
``dnn.strides``), a graph output, or an intermediate tensor (row-major; one
made by a reshape / transpose / slice kernel also names that kernel's ops,
since dnn-transpose-views may make it a strided view the kernel reads in
place).
"""

import dataclasses
import hashlib
import json

# Attributes that name things and decide nothing about the code.
NAME_ATTRS = ("dnn.name",)


def _tensor(spec, strides=None):
    out = {"shape": list(spec.shape), "dtype": spec.dtype}
    if strides is not None:
        out["strides"] = list(strides)
    return out


def _value(value):
    """An attribute value in JSON, exactly: floats by repr, tuples as lists."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return [_value(v) for v in value]
    return str(value)


# Problem fields left out: the kernel's name, and the arch (the key's own part).
NOT_SIGNED = ("kernel", "arch")


def signature(problem, layout=None):
    """The canonical signature (a JSON-ready dict) of ``problem`` (a
    heuristics.Problem): every field but the kernel's name and the arch,
    with ``layout`` (a Layout of ``kernel_layouts``; None: strides unknown,
    as for a kernel function alone) giving the strides of ``inputs`` and
    ``outputs``. A field added to Problem joins the signature by itself."""
    strides = {
        "inputs": layout.inputs if layout is not None else (),
        "outputs": layout.outputs if layout is not None else (),
    }
    out = {}
    for f in dataclasses.fields(problem):
        if f.name in NOT_SIGNED:
            continue
        value = getattr(problem, f.name)
        if f.name == "anchor_attrs":
            out["attrs"] = [[name, _value(v)] for name, v in value if name not in NAME_ATTRS]
        elif f.name in strides:
            given = tuple(strides[f.name]) + (None,) * len(value)
            out[f.name] = [_tensor(t, s) for t, s in zip(value, given)]
        elif isinstance(value, tuple) and value and all(hasattr(t, "dtype") for t in value):
            out[f.name] = [_tensor(t) for t in value]
        else:
            out[f.name] = _value(value)
    return out


def digest(sig):
    """32 hex digits of sha256 over the signature's canonical JSON."""
    text = json.dumps(sig, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def summary(problem):
    """One line for people: ``matmul+relu: 64x32xbf16, 32x16xbf16 -> 64x16xbf16``."""
    ops = "+".join(o for o in problem.ops if o != "constant") or problem.anchor
    ins = ", ".join(map(str, problem.inputs))
    outs = ", ".join(map(str, problem.outputs))
    return f"{ops}: {ins} -> {outs}"


class Layout:
    """The strides of a kernel's arguments and results (tuples of ints, in
    elements), with the producer of any argument made by a copy kernel."""

    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)

    def __eq__(self, other):
        return isinstance(other, Layout) and (self.inputs, self.outputs) == \
            (other.inputs, other.outputs)

    def __repr__(self):
        return f"Layout(inputs={self.inputs}, outputs={self.outputs})"


def kernel_layouts(module):
    """{kernel function name: Layout} of a fused-stage module (the first call
    of each kernel in the graph function). Needs the MLIR bindings."""
    from mlir import ir

    from dnnc.codegen.gpu import irutil

    with module.context:
        graph = irutil.graph_function(module)
        block = irutil.body(graph)
        arg_strides = _declared(graph, "arg_attrs", len(block.arguments))
        anchors = {irutil.symbol(f): f for f in irutil.kernel_functions(module)}
        returned = {}
        results = _declared(graph, "res_attrs", len(irutil.function_type(graph).results))
        made_by = {}
        layouts = {}
        for op in block.operations:
            op = op.operation
            if op.name == "func.return":
                for i, v in enumerate(op.operands):
                    returned.setdefault(v, results[i])
        for op in block.operations:
            op = op.operation
            if op.name != "func.call":
                continue
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            for r in op.results:
                made_by[r] = callee
            if callee in layouts:
                continue
            ins = []
            for v in op.operands:
                if irutil.is_block_argument(v):
                    declared = arg_strides[ir.BlockArgument(v).arg_number]
                    ins.append(tuple(declared or _row_major(v.type)))
                    continue
                strides = tuple(_row_major(v.type))
                producer = anchors.get(made_by.get(v))
                if producer is not None and "dnn.anchor" in producer.attributes and \
                        ir.StringAttr(producer.attributes["dnn.anchor"]).value == "tensor":
                    ops = [o.name[4:] for o in irutil.ops(producer) if o.name.startswith("dnn.")]
                    ins.append(strides + ("via " + "+".join(ops),))
                else:
                    ins.append(strides)
            outs = [tuple(returned.get(r) or _row_major(r.type)) for r in op.results]
            layouts[callee] = Layout(ins, outs)
        return layouts


def _declared(fn, key, n):
    """The ``dnn.strides`` of each of ``n`` arguments or results (None: none)."""
    from mlir import ir

    from dnnc.codegen.gpu import irutil

    out = [None] * n
    if key not in fn.attributes:
        return out
    for i, attrs in enumerate(ir.ArrayAttr(fn.attributes[key])):
        d = ir.DictAttr(attrs)
        if "dnn.strides" in d:
            out[i] = irutil.int_list(d["dnn.strides"])
    return out


def _row_major(type_):
    from mlir import ir

    from dnnc.codegen.gpu import irutil

    if isinstance(type_, ir.ShapedType):
        return irutil.row_major_strides(list(ir.ShapedType(type_).shape))
    return []

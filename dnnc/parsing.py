"""dnn MLIR text in: parse it into a module and verify every dnn op.

    module = parse(open("graph.mlir").read())
    module = parse_graph(text)     # and it must hold a dnn graph (dnnc compile / run)

``dnnc-opt`` reads its input through ``parse``; the driver (``compile_cuda``
of MLIR text), ``dnnc compile`` / ``run`` and ``Graph.from_mlir`` read a graph
through ``parse_graph``. Both run the ``dnn-verify`` checks
(dnnc/passes/dnn_verify.py), so this module sits above the passes, with the
driver.
"""

import re

from mlir import ir

from dnnc import dialect
from dnnc.dialect.walk import BY_VALUE, by_value_arguments, entry_function
from dnnc.errors import GraphError, ToolError, VerificationError
from dnnc.passes.dnn_verify import verify_module


def parse(text, context=None):
    """Parse dnn MLIR text into a module and verify every dnn op. Parse errors
    become ToolError with MLIR's message; op errors VerificationError."""
    ctx = context or dialect.context()
    with ctx:
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as err:
            raise ToolError("cannot parse the MLIR input", stderr=_messages(err, text)) from None
        verify_module(module)
        check_layouts(module)
        check_scalars(module)
    return module


def parse_graph(text, context=None):
    """``parse``, then ``check_graph``: what ``dnnc compile`` and ``dnnc run``
    read, and what the driver compiles when given MLIR text."""
    module = parse(text, context)
    with module.context:
        check_graph(module)
    return module


def check_graph(module):
    """The module's graph function (``entry_function``: the one marked
    ``dnn.graph``, else the only public function), refused with GraphError
    unless it is a dnn graph: dnn ops only, each output made by one of them.
    A function of other ops is not something to compile (it used to pass as
    a graph of 0 kernels), and an output that is an input is a copy no kernel
    makes. ``Graph.from_mlir`` reads a graph by the same rule."""
    fn = entry_function(module)
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    block = fn.regions[0].blocks[0]
    for op in block.operations:
        op_name = op.operation.name
        if op_name == "func.return":
            for i, value in enumerate(op.operands):
                if isinstance(value.owner, ir.Block):
                    raise GraphError(f"graph function '@{name}' output #{i}: expected the "
                                     "result of a dnn op, got an input of the function")
        elif not op_name.startswith("dnn."):
            raise GraphError(f"graph function '@{name}': expected dnn ops only, got "
                             f"'{op_name}' at {op.location}")
    return fn


def check_layouts(module):
    """The ``dnn.strides`` of every function's arguments and results against
    the layout rule every path shares (dnnc_runtime/layout.py): one stride
    per dim, none negative, no two elements of a result at one address.
    GraphError names the tensor."""
    from dnnc_runtime import layout

    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        fn = op.operation
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        for key, types, output in (("arg_attrs", ftype.inputs, False),
                                   ("res_attrs", ftype.results, True)):
            if key not in fn.attributes:
                continue
            for i, (attrs, t) in enumerate(zip(fn.attributes[key], types)):
                attrs = ir.DictAttr(attrs)
                if "dnn.strides" not in attrs or not isinstance(t, ir.RankedTensorType):
                    continue
                strides = list(ir.DenseI64ArrayAttr(attrs["dnn.strides"]))
                wrong = layout.problem(ir.RankedTensorType(t).shape, strides, output)
                if wrong:
                    name = ir.StringAttr(attrs["dnn.name"]).value if "dnn.name" in attrs \
                        else f"{'output' if output else 'input'}{i}"
                    raise GraphError(f"{'output' if output else 'input'} '{name}': {wrong}")


def check_scalars(module):
    """Every argument marked ``dnn.by_value`` (a runtime scalar) is a rank-0
    f32 tensor (or, after bufferization, memref); VerificationError names
    the function and the argument."""
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        fn = op.operation
        args = fn.regions[0].blocks[0].arguments if len(fn.regions[0].blocks) else []
        for i in by_value_arguments(fn):
            t = args[i].type if i < len(args) else None
            shaped = ir.ShapedType(t) if isinstance(t, (ir.RankedTensorType, ir.MemRefType)) \
                else None
            if shaped is None or shaped.rank != 0 or not isinstance(shaped.element_type,
                                                                     ir.F32Type):
                name = ir.StringAttr(fn.attributes["sym_name"]).value
                raise VerificationError(f"function '@{name}' argument #{i}: {BY_VALUE}: "
                                        f"expected tensor<f32> (a rank-0 f32 runtime scalar), "
                                        f"got {t}")


def _messages(err, text):
    """MLIR's diagnostics, one per line. Structural errors from IRDL do not name
    the op ("op expects ..."); name it from the source line they point at."""
    diags = getattr(err, "error_diagnostics", None)
    if not diags:
        return str(err)
    lines = text.splitlines()
    out = []
    for d in diags:
        message = d.message
        m = re.match(r'loc\("[^"]*":(\d+):\d+\)', str(d.location))
        if m and int(m.group(1)) <= len(lines):
            name = re.search(r'"(dnn\.\w+)"', lines[int(m.group(1)) - 1])
            if name and name.group(1) not in message:
                op = "" if message.startswith("op ") else "op "
                message = f"'{name.group(1)}' {op}{message}"
        out.append(f"{d.location}: error: {message}")
    return "\n".join(out)

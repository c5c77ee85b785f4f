"""Create new kernel functions for work found on the host.

After bufferization the graph function should only allocate buffers and call
kernel functions (``dnn.kernel``). The GPU passes that find data movement on
the host (a copy into an output, a strided graph input) wrap it into a new
private kernel function with ``new_kernel`` and call that instead, so every
op that touches memory runs inside a GPU kernel.
"""

from mlir import ir
from mlir.dialects import func, linalg

from dnnc.codegen.gpu import irutil


def unique_name(module, base):
    """``base``, or ``base_N`` for the first N that no symbol of ``module`` uses."""
    taken = {irutil.symbol(op.operation) for op in irutil.body(module).operations
             if "sym_name" in op.operation.attributes}
    if base not in taken:
        return base
    n = 1
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def new_kernel(module, base, arg_types, build, anchor):
    """A private ``func.func`` marked ``dnn.kernel`` (``dnn.anchor = anchor``)
    placed before the graph function; ``build(arguments)`` fills its body at
    the current location. Returns the function op."""
    graph = irutil.graph_function(module)
    name = unique_name(module, base)
    with ir.InsertionPoint(graph):
        fn = func.FuncOp(name, ir.FunctionType.get(list(arg_types), []), visibility="private")
    fn.attributes[irutil.KERNEL_ATTR] = ir.UnitAttr.get()
    fn.attributes["dnn.anchor"] = ir.StringAttr.get(anchor)
    block = fn.add_entry_block()
    with ir.InsertionPoint(block):
        build(list(block.arguments))
        func.ReturnOp([])
    return fn.operation


def copy_kernel(module, base, source_type, dest_type):
    """A kernel function ``(source, dest)`` that copies ``source`` into ``dest``."""
    return new_kernel(module, base, [source_type, dest_type],
                      lambda args: linalg.copy(args[0], outs=[args[1]]), "copy")


def permuted_copy_kernel(module, base, source_type, dest_type, read):
    """A kernel function ``(source, dest)`` whose ``dest`` element at index
    ``i`` is ``source``'s at ``[i[read[0]], i[read[1]], ...]``: a
    linalg.generic over the destination's dims reading the source through
    the permutation ``read`` (the form dnn-tile-transposes lowers)."""
    def build(args):
        loops = len(read)
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        op = linalg.GenericOp([], [args[0]], [args[1]],
                              ir.ArrayAttr.get([
                                  ir.AffineMapAttr.get(ir.AffineMap.get_permutation(read)),
                                  ir.AffineMapAttr.get(ir.AffineMap.get_identity(loops))]),
                              ir.ArrayAttr.get([parallel] * loops))
        element = ir.MemRefType(args[0].type).element_type
        block = op.regions[0].blocks.append(element, element)
        with ir.InsertionPoint(block):
            linalg.YieldOp([block.arguments[0]])
    return new_kernel(module, base, [source_type, dest_type], build, "copy")


def call(fn, operands):
    """A ``func.call`` of ``fn`` at the current insertion point."""
    return func.CallOp([], ir.FlatSymbolRefAttr.get(irutil.symbol(fn)), list(operands))

"""dnn-transpose-views: a transpose that only feeds layout-free kernels
becomes a view instead of a copy.

``x @ W.T`` with ``W`` stored (out, in), as a linear layer keeps it, is a
transpose kernel copying ``W`` into a fresh buffer, then the matmul kernel
reading that buffer. A tc-sm90 kernel reads its operands through TMA
descriptors that take any dense layout (dnnc/codegen/gpu/tensorcore/sm90/), so the
copy is not needed: the transposed buffer can be a ``memref.reinterpret_cast``
of the source with permuted strides, passed to the kernel as it is.

Run after dnn-io-strides, on the bufferized graph function. A call is folded
when:

* its callee is a kernel whose body is one ``linalg.generic`` that copies
  its first argument into its second through a permutation (an input map
  that permutes the loop dims, an identity output map, a body that yields
  the input);
* the destination is a ``memref.alloc`` of the graph function, and every
  other use of it is an operand of a call to a layout-free kernel called
  once (dnn_io_strides.layout_free_reader) that only reads that argument
  (as an input of its linalg ops);
* the source has a static strided layout.

Before::

    %t = memref.alloc() : memref<128x192xbf16>
    call @g_k0_tensor(%w, %t)        // copies w transposed (a permutation)
    call @g_k1_matmul(%x, %t, %y)    // tc-sm90

After::

    %t = memref.reinterpret_cast %w to offset: [0], sizes: [128, 192],
        strides: [1, 128] : memref<192x128xbf16> to memref<128x192xbf16, strided<[1, 128]>>
    call @g_k1_matmul(%x, %t, %y)    // its argument retyped to the strided memref

The transpose kernel is erased when nothing else calls it.

Lit test: test/lit/passes/dnn_transpose_views.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.passes import DnncPass, register
from dnnc.passes.dnn_io_strides import call_counts, layout_free_reader, set_argument_type


def copy_permutation(callee):
    """The permutation ``p`` (source dim k is read at output dim p[k]) of a
    kernel that only copies argument 0 into argument 1 through it; None
    otherwise. Shared with dnn-layout-views."""
    ops = [op.operation for op in irutil.body(callee).operations]
    if len(ops) != 2 or ops[0].name != "linalg.generic" or ops[1].name != "func.return":
        return None
    generic = ops[0]
    args = list(irutil.body(callee).arguments)
    if len(args) != 2 or list(generic.operands) != args:
        return None
    if not all(irutil.is_parallel(i) for i in ir.ArrayAttr(generic.attributes["iterator_types"])):
        return None
    maps = irutil.indexing_maps(generic)
    source, dest = maps
    rank = dest.n_dims
    if dest != ir.AffineMap.get_identity(rank) or source.n_dims != rank \
            or len(source.results) != rank:
        return None
    perm = []
    for r in source.results:
        if not isinstance(r, ir.AffineDimExpr):
            return None
        perm.append(ir.AffineDimExpr(r).position)
    if sorted(perm) != list(range(rank)) or perm == list(range(rank)):
        return None
    body = irutil.body_ops(generic)
    block = generic.regions[0].blocks[0]
    if len(body) != 1 or body[0].name != "linalg.yield" \
            or body[0].operands[0] != block.arguments[0]:
        return None
    return perm


def only_read(callee, index):
    """True when argument ``index`` of ``callee`` is only an input of its
    linalg ops. Shared with dnn-layout-views."""
    arg = irutil.body(callee).arguments[index]
    for use in arg.uses:
        owner = use.owner
        if not owner.name.startswith("linalg.") or \
                use.operand_number >= len(owner.opview.inputs):
            return False
    return True


def _view_type(source_type, perm):
    """The strided memref type of the transposed view of ``source_type``."""
    shape, strides, offset = irutil.memref_geometry(source_type)
    # Output dim p[k] runs along source dim k.
    out_shape, out_strides = [0] * len(shape), [0] * len(shape)
    for k, d in enumerate(perm):
        out_shape[d], out_strides[d] = shape[k], strides[k]
    return ir.MemRefType.get(out_shape, ir.MemRefType(source_type).element_type,
                             layout=ir.StridedLayoutAttr.get(offset, out_strides)), offset


def apply(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        calls = call_counts(module)
        graph = irutil.graph_function(module)
        for call in list(irutil.body(graph).operations):
            call = call.operation
            if call.name != "func.call" or len(call.operands) != 2:
                continue
            name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
            callee = functions.get(name)
            perm = None if callee is None else copy_permutation(callee)
            if perm is None:
                continue
            source, dest = call.operands
            alloc = irutil.defining_op(dest)
            if alloc is None or alloc.name != "memref.alloc":
                continue
            try:
                view_type, offset = _view_type(source.type, perm)
            except (ValueError, RuntimeError):
                continue  # no static strided layout
            readers = [layout_free_reader(use, functions, calls)
                       for use in dest.uses if use.owner != call]
            if not readers or None in readers or \
                    not all(only_read(target, index) for target, index in readers):
                continue
            t = ir.MemRefType(view_type)
            with ir.InsertionPoint(alloc):
                view = memref.reinterpret_cast(view_type, source, [], [], [], [offset],
                                               list(t.shape), irutil.memref_geometry(t)[1])
            dest.replace_all_uses_with(view)
            for target, index in readers:
                set_argument_type(target, index, view_type)
            call.erase()
            alloc.erase()
            calls[name] -= 1
            if calls[name] == 0:
                callee.erase()
                del functions[name]


@register
@dataclass
class DnnTransposeViews(DnncPass):
    NAME = "dnn-transpose-views"

    def run(self, module):
        apply(module)

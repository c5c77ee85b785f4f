"""dnn-transpose-views: a transpose that only feeds layout-free kernels
becomes a view instead of a copy.

``x @ W.T`` with ``W`` stored (out, in), as a linear layer keeps it, is a
transpose kernel copying ``W`` into a fresh buffer, then the matmul kernel
reading that buffer. A tc-sm90 kernel reads its operands through TMA
descriptors that take any dense layout (dnnc/codegen/gpu/tensorcore/sm90/), so the
copy is not needed: the transposed buffer can be a ``memref.reinterpret_cast``
of the source with permuted strides, passed to the kernel as it is.

Run after dnn-io-strides and dnn-slice-views (which leaves the transposes
of the slices it folds reading strided views), on the bufferized graph
function. A call is folded when:

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

The output side is the same view, the other way round: attention
written the PyTorch way transposes its o ``[B, H, S, D]`` back to
``[B, S, H, D]`` for the output projection, and the tc-sm90 and tc-sm80
attention kernels store o at any strides. A call is
also folded when its source is a ``memref.alloc`` of the graph function
used only by the copy and by one call before it to an attention kernel that
writes any layout (``layout_free_reader`` with LAYOUT_FREE_OUTPUTS), and its
destination is an alloc of the graph function or a graph output, or a view
of one (a reshape, dnn-layout-views' reinterpret_cast), that nothing
touches before the copy: the source becomes a reinterpret_cast of the
destination through the inverse permutation (the alloc and views moved
ahead of the writer), which the writer fills in place::

    %o = memref.alloc() : memref<2x4x130x64xbf16>
    call @g_k7_sdpa(%q, %k, %v, %o)
    %t = memref.alloc() : memref<2x130x4x64xbf16>
    call @g_k8_tensor(%o, %t)        // transpose [0, 2, 1, 3]

becomes::

    %t = memref.alloc() : memref<2x130x4x64xbf16>
    %o = memref.reinterpret_cast %t to offset: [0], sizes: [2, 4, 130, 64],
        strides: [33280, 64, 256, 1] : ...
    call @g_k7_sdpa(%q, %k, %v, %o)

Either way, an attention kernel's view must have rows TMA can step
(tensorcore/attention.py's ``rows_problem``); where it has not, the copy
stays and its plan reason (``dnn.config_reason``) says why.

The transpose kernel is erased when nothing else calls it.

Lit test: test/lit/passes/dnn_transpose_views.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.attention import ATTR as ATTENTION, argument_role, \
    rows_problem
from dnnc.passes import DnncPass, register
from dnnc.passes.dnn_io_strides import LAYOUT_FREE_OUTPUTS, call_counts, is_output, \
    layout_free_reader, set_argument_type


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


def input_fold(call, functions, calls):
    """(permutation, destination alloc, readers) when the permutation copy
    ``call`` may become a view of its source: its destination is an alloc
    that only layout-free kernels (layout_free_reader) read, and only read;
    None otherwise. Shared with dnn-slice-views, which folds slices that
    such a copy reads."""
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = functions.get(name)
    perm = None if callee is None else copy_permutation(callee)
    if perm is None:
        return None
    dest = call.operands[1]
    alloc = irutil.defining_op(dest)
    if alloc is None or alloc.name != "memref.alloc":
        return None
    readers = [layout_free_reader(use, functions, calls)
               for use in dest.uses if use.owner != call]
    if not readers or None in readers or \
            not all(only_read(target, index) for target, index in readers):
        return None
    return perm, alloc, readers


def permuted(geometry, perm):
    """The (shape, strides, offset) of the transpose through ``perm`` of a
    view of ``geometry``: output dim p[k] runs along source dim k."""
    shape, strides, offset = geometry
    out_shape, out_strides = [0] * len(shape), [0] * len(shape)
    for k, d in enumerate(perm):
        out_shape[d], out_strides[d] = shape[k], strides[k]
    return out_shape, out_strides, offset


def strided_type(geometry, element):
    shape, strides, offset = geometry
    return ir.MemRefType.get(shape, element, layout=ir.StridedLayoutAttr.get(offset, strides))


def attention_problem(readers, types):
    """Why an attention kernel among ``readers`` ((kernel, argument index))
    cannot take its argument at the memref type of ``types`` (one per
    reader), or None: its tensor-core loads and stores need TMA's rows
    (tensorcore/attention.py's rows_problem)."""
    for (target, index), type_ in zip(readers, types):
        role = argument_role(target, index)
        if role is None:
            continue
        why = rows_problem(role, type_)
        if why:
            return f"{irutil.symbol(target)} reads {role} through TMA: {why}"
    return None


def keep(callee, why):
    """Say in ``callee``'s plan reason why its copy stays."""
    reason = "dnn.config_reason"
    text = ir.StringAttr(callee.attributes[reason]).value if reason in callee.attributes else ""
    note = f"kept as a copy, not a view: {why}"
    callee.attributes[reason] = ir.StringAttr.get(f"{text}; {note}" if text else note)


def _fold_input(call, functions, calls):
    found = input_fold(call, functions, calls)
    if found is None:
        return False
    perm, alloc, readers = found
    source = call.operands[0]
    try:
        geometry = permuted(irutil.memref_geometry(source.type), perm)
    except (ValueError, RuntimeError):
        return False  # no static strided layout
    view_type = strided_type(geometry, ir.MemRefType(source.type).element_type)
    why = attention_problem(readers, [view_type] * len(readers))
    if why:
        keep(_callee(call, functions), why)
        return False
    shape, strides, offset = geometry
    with ir.InsertionPoint(alloc):
        view = memref.reinterpret_cast(view_type, source, [], [], [], [offset], shape, strides)
    call.operands[1].replace_all_uses_with(view)
    for target, index in readers:
        set_argument_type(target, index, view_type)
    drop_call(call, functions, calls)
    alloc.erase()
    return True


def _fold_output(call, functions, calls, graph):
    """A permutation copy of a buffer that one layout-free writer fills (an
    attention's o) into a buffer of the graph: the writer writes the
    destination through the inverse permutation's strides."""
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = functions.get(name)
    perm = None if callee is None else copy_permutation(callee)
    if perm is None:
        return False
    source, dest = call.operands
    body = irutil.body(graph)
    alloc = irutil.defining_op(source)
    if alloc is None or alloc.name != "memref.alloc" or alloc.block != body:
        return False
    others = [use for use in source.uses if use.owner != call]
    if len(others) != 1:
        return False
    writer = others[0].owner.operation
    if writer.block != body or not writer.is_before_in_block(call):
        return False
    # tc-sm80's attention kernels store o (and dq, dk, dv) by vector stores
    # at the memref's indices, so at any strides, as tc-sm90's do.
    found = layout_free_reader(others[0], functions, calls,
                               LAYOUT_FREE_OUTPUTS + ("tc-sm80",))
    # Only attention kernels so far: the other writers of any layout
    # (windows, convolutions) have not been checked on arbitrary
    # permutations of their outputs.
    if found is None or ATTENTION not in found[0].attributes:
        return False
    target, index = found
    chain, root = views_of(dest)
    if not used_after(root, call):
        return False
    root_op = irutil.defining_op(root)
    if root_op is not None and (root_op.name != "memref.alloc" or root_op.block != body):
        return False
    if root_op is None and (ir.BlockArgument(root).owner != body or
                            not is_output(graph, ir.BlockArgument(root).arg_number)):
        return False
    if any(op.block != body for op in chain):
        return False
    try:
        shape, strides, offset = irutil.memref_geometry(dest.type)
    except (ValueError, RuntimeError):
        return False
    # Source element i (at output index j, j[perm[k]] = i[k]) lies at
    # dest's strides of the dims it moves to.
    view_shape = list(ir.MemRefType(source.type).shape)
    geometry = (view_shape, [strides[perm[k]] for k in range(len(perm))], offset)
    view_type = strided_type(geometry, ir.MemRefType(source.type).element_type)
    why = attention_problem([found], [view_type])
    if why:
        keep(callee, why.replace(" reads ", " writes "))
        return False
    # The destination (and the views it is) must exist before the writer.
    for op in ([root_op] if root_op is not None else []) + chain:
        if not op.is_before_in_block(alloc):
            op.move_before(alloc)
    with ir.InsertionPoint(alloc):
        view = memref.reinterpret_cast(view_type, dest, [], [], [], [offset], geometry[0],
                                       geometry[1])
    source.replace_all_uses_with(view)
    set_argument_type(target, index, view_type)
    drop_call(call, functions, calls)
    alloc.erase()
    return True


VIEWS = ("memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast")


def views_of(value):
    """(the view ops ``value`` is, outermost first, the buffer under them).
    Shared with dnn-concat-views."""
    chain = []
    op = irutil.defining_op(value)
    while op is not None and op.name in VIEWS:
        chain.insert(0, op)
        value = op.operands[0]
        op = irutil.defining_op(value)
    return chain, value


def used_after(value, call):
    """True when every user of ``value`` (and of its views) but
    ``call`` comes after ``call``: nothing else touches it while a writer
    before ``call`` fills it in ``call``'s stead."""
    for use in value.uses:
        op = use.owner.operation
        if op == call:
            continue
        if op.name in VIEWS and use.operand_number == 0:
            if not used_after(op.results[0], call):
                return False
            continue
        if op.block != call.block or not call.is_before_in_block(op):
            return False
    return True


def _callee(call, functions):
    return functions.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)


def drop_call(call, functions, calls):
    """Erase ``call``, and its callee when nothing else calls it. Shared
    with dnn-conv-layouts."""
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    call.erase()
    calls[name] -= 1
    if calls[name] == 0:
        functions.pop(name).erase()


def apply(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        calls = call_counts(module)
        graph = irutil.graph_function(module)
        body = irutil.body(graph)
        for call in list(body.operations):
            call = call.operation
            if call.name != "func.call" or len(call.operands) != 2:
                continue
            if not _fold_input(call, functions, calls):
                _fold_output(call, functions, calls, graph)


@register
@dataclass
class DnnTransposeViews(DnncPass):
    NAME = "dnn-transpose-views"

    def run(self, module):
        apply(module)

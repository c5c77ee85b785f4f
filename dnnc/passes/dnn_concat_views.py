"""dnn-concat-views: the inputs of a concat that attention kernels write
become views of the concat's result, which those kernels fill in place.

The backward of attention written the PyTorch way joins dq, dk and dv into
the gradient of the qkv projection: ``dq.transpose(1, 2).reshape(B, S, C)``
and the same for dk and dv, then ``cat(..., dim=-1)`` into ``[B, S, 3 x C]``.
dnn-transpose-views already makes the attention kernel write each gradient
through a view of the transpose's destination (laid out ``[B, S, H, D]``);
the concat then copies the three into the joined buffer. A slice of that
buffer is a view of it (an offset and its strides), and the tensor-core
attention kernels store dq, dk and dv at any strides whose rows TMA can
step, so the copy goes: each destination becomes a ``memref.reinterpret_cast``
of the concat's result at its slice, and the kernel writes there. This is
dnn-slice-views' fold on the output side.

Run after dnn-transpose-views, on the bufferized graph function. A call is
folded when:

* its callee, called once, only copies each of its arguments but the last
  whole into a slice of the last (``memref.subview`` of it with static
  offsets and unit strides, ``linalg.copy`` of the argument into it: the
  concat kernel convert-dnn-to-linalg makes);
* its result is a row-major ``memref.alloc`` of the graph function or a
  graph output, or a view of one (dnn-layout-views' reinterpret_cast of a
  ``[B x S, 3 C]`` output as ``[B, S, 3 C]``), that nothing touches before
  the call;
* each input is a row-major ``memref.alloc`` of the graph function, seen
  through reshapes (``memref.collapse_shape`` and ``expand_shape``) that
  only the concat reads, and written by one earlier call to a tc-sm90 or
  tc-sm80 attention kernel (it carries ``dnn.attention``) as one of its
  results (o, dq, dk, dv), directly or through a ``memref.reinterpret_cast``
  that permutes its dims (dnn-transpose-views' view), and used by nothing
  else;
* every writer can store its view: rows TMA can step
  (tensorcore/attention.py's ``rows_problem``). Where one cannot, the copy
  stays and the concat kernel's plan reason says why.

Before (dnn-transpose-views ran)::

    %dq = memref.alloc() : memref<2x64x12x64xbf16>
    %dqv = memref.reinterpret_cast %dq to offset: [0], sizes: [2, 12, 64, 64],
        strides: [49152, 64, 768, 1] : ...
    ... %dk, %dkv, %dv, %dvv the same
    call @g_k3_sdpa_backward(%q, %k, %v, %o, %do, %lse, %dqv, %dkv, %dvv)
    %a = memref.collapse_shape %dq [[0], [1], [2, 3]] : ... into memref<2x64x768xbf16>
    ... %b, %c the same
    %cat = memref.alloc() : memref<2x64x2304xbf16>
    call @g_k4_concat(%a, %b, %c, %cat)

After::

    %cat = memref.alloc() : memref<2x64x2304xbf16>
    %dqv = memref.reinterpret_cast %cat to offset: [0], sizes: [2, 12, 64, 64],
        strides: [147456, 64, 2304, 1] : ...
    %dkv = ... offset: [768] ...
    %dvv = ... offset: [1536] ...
    call @g_k3_sdpa_backward(%q, %k, %v, %o, %do, %lse, %dqv, %dkv, %dvv)

The concat kernel is erased.

Lit test: test/lit/passes/dnn_concat_views.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.attention import ATTR as ATTENTION, argument_role
from dnnc.passes import DnncPass, register
from dnnc.passes.dnn_io_strides import LAYOUT_FREE_OUTPUTS, call_counts, is_output, \
    layout_free_reader, set_argument_type
from dnnc.passes.dnn_transpose_views import attention_problem, keep, only_read, strided_type, \
    used_after, views_of

RESHAPES = ("memref.collapse_shape", "memref.expand_shape")
WRITTEN = ("o", "dq", "dk", "dv")


def concat_pieces(callee):
    """[(argument index, element offset into the last argument)] of a kernel
    that copies each argument but the last whole into a unit-stride slice
    of the last, in order; None when it does anything else."""
    args = list(irutil.body(callee).arguments)
    ops = [op.operation for op in irutil.body(callee).operations]
    if len(args) < 2 or len(ops) != 2 * (len(args) - 1) + 1 or ops[-1].name != "func.return":
        return None
    dest = args[-1]
    if not isinstance(ir.MemRefType(dest.type).layout, ir.AffineMapAttr):
        return None   # a strided destination: offsets below assume row-major
    dest_strides = irutil.row_major_strides(list(ir.MemRefType(dest.type).shape))
    pieces = []
    for i in range(len(args) - 1):
        subview, copy = ops[2 * i], ops[2 * i + 1]
        if subview.name != "memref.subview" or copy.name != "linalg.copy" or \
                list(subview.operands) != [dest] or \
                list(copy.operands) != [args[i], subview.results[0]]:
            return None
        offsets = irutil.int_list(subview.attributes["static_offsets"])
        sizes = irutil.int_list(subview.attributes["static_sizes"])
        steps = irutil.int_list(subview.attributes["static_strides"])
        source = ir.MemRefType(args[i].type)
        if any(s != 1 for s in steps) or sizes != list(source.shape) or \
                source.element_type != ir.MemRefType(dest.type).element_type or \
                any(o < 0 for o in offsets):   # dynamic offsets read as negative
            return None
        pieces.append((i, sum(o * s for o, s in zip(offsets, dest_strides))))
    return pieces


def _groups(op):
    return [irutil.int_list(g) for g in ir.ArrayAttr(op.attributes["reassociation"])]


def _expand(geometry, groups, shape):
    """The geometry of ``shape`` whose ``groups`` of dims run along the dims
    of ``geometry`` (each group row-major within its dim)."""
    _, strides, offset = geometry
    out = [0] * len(shape)
    for src, group in enumerate(groups):
        step = strides[src]
        for d in reversed(group):
            out[d] = step
            step *= shape[d]
    return list(shape), out, offset


def _collapse(geometry, groups, shape):
    """The geometry of ``shape`` whose dims each run over one group of dims
    of ``geometry``; None where a group is not one run of memory."""
    in_shape, strides, offset = geometry
    out = [0] * len(shape)
    for dst, group in enumerate(groups):
        moving = [d for d in group if in_shape[d] != 1] or group
        for inner, outer in zip(moving[1:], moving[:-1]):
            if strides[outer] != strides[inner] * in_shape[inner]:
                return None
        out[dst] = strides[moving[-1]]
    return list(shape), out, offset


def _source_geometry(view, geometry):
    """The geometry of reshape ``view``'s source when its result has
    ``geometry``: a collapse's source expands it, an expand's collapses it."""
    shape = list(ir.MemRefType(view.operands[0].type).shape)
    if view.name == "memref.collapse_shape":
        return _expand(geometry, _groups(view), shape)
    return _collapse(geometry, _groups(view), shape)


def _permutation(view, root_shape):
    """perm (view dim k runs along root dim perm[k]) of a reinterpret_cast
    ``view`` of a row-major buffer of ``root_shape`` that only permutes its
    dims; None otherwise."""
    shape, strides, offset = irutil.memref_geometry(view.results[0].type)
    dense = irutil.row_major_strides(root_shape)
    if offset != 0 or sorted(shape) != sorted(root_shape):
        return None
    perm, free = [], list(range(len(root_shape)))
    for n, s in zip(shape, strides):
        match = next((d for d in free if root_shape[d] == n and (n == 1 or dense[d] == s)), None)
        if match is None:
            return None
        perm.append(match)
        free.remove(match)
    return perm


class _Input:
    """One concat input: its buffer (``root``), the reshapes from it to the
    concat's operand (``chain``, innermost first), and the attention
    kernel writing it: (``call``, kernel, argument index, the permuting
    ``view`` it is passed, or None when passed the buffer itself)."""

    def __init__(self, root, chain):
        self.root, self.chain = root, chain
        self.call = self.kernel = self.index = self.view = self.perm = None


def _input(value, call, functions, calls, body):
    chain = []
    op = irutil.defining_op(value)
    while op is not None and op.name in RESHAPES:
        if len(list(op.results[0].uses)) != 1:
            return None
        chain.append(op)
        op = irutil.defining_op(op.operands[0])
    if op is None or op.name != "memref.alloc" or op.block != body or \
            not isinstance(ir.MemRefType(op.results[0].type).layout, ir.AffineMapAttr):
        return None
    found = _Input(op, chain)
    others = [use for use in op.results[0].uses
              if not (chain and use.owner.operation == chain[-1]) and
              not (not chain and use.owner.operation == call)]
    if len(others) != 1:
        return None
    use = others[0]
    user = use.owner.operation
    if user.name == "memref.reinterpret_cast":
        found.view = user
        found.perm = _permutation(user, list(ir.MemRefType(op.results[0].type).shape))
        uses = list(user.results[0].uses)
        if found.perm is None or len(uses) != 1:
            return None
        use = uses[0]
        user = use.owner.operation
    writer = layout_free_reader(use, functions, calls, LAYOUT_FREE_OUTPUTS + ("tc-sm80",))
    if writer is None or ATTENTION not in writer[0].attributes or \
            user.block != body or not user.is_before_in_block(call):
        return None
    kernel, index = writer
    if argument_role(kernel, index) not in WRITTEN or only_read(kernel, index):
        return None
    found.call, found.kernel, found.index = user, kernel, index
    return found


def _fold(call, functions, calls, graph):
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = functions.get(name)
    pieces = None if callee is None or calls.get(name) != 1 else concat_pieces(callee)
    if not pieces:
        return
    body = irutil.body(graph)
    dest = call.operands[len(call.operands) - 1]
    views, root = views_of(dest)
    root_op = irutil.defining_op(root)
    if root_op is not None and (root_op.name != "memref.alloc" or root_op.block != body):
        return
    if root_op is None and (ir.BlockArgument(root).owner != body or
                            not is_output(graph, ir.BlockArgument(root).arg_number)):
        return
    if any(op.block != body for op in views) or \
            not isinstance(ir.MemRefType(dest.type).layout, ir.AffineMapAttr) or \
            not used_after(root, call):
        return
    inputs = [_input(call.operands[i], call, functions, calls, body) for i, _ in pieces]
    if None in inputs:
        return
    dest_type = ir.MemRefType(dest.type)
    dest_strides = irutil.row_major_strides(list(dest_type.shape))
    element = dest_type.element_type
    plans = []
    for (i, offset), found in zip(pieces, inputs):
        operand = ir.MemRefType(call.operands[i].type)
        geometry = (list(operand.shape), dest_strides, offset)
        for view in found.chain:
            geometry = _source_geometry(view, geometry)
            if geometry is None:
                return
        if found.view is None:
            written = geometry
        else:
            shape, strides, start = geometry
            written = ([shape[d] for d in found.perm], [strides[d] for d in found.perm], start)
        written_type = strided_type(written, element)
        why = attention_problem([(found.kernel, found.index)], [written_type])
        if why:
            keep(callee, why.replace(" reads ", " writes "))
            return
        plans.append((found, written, written_type))
    # The joined buffer must exist before its first writer.
    first = plans[0][0].root
    for found, _, _ in plans[1:]:
        if found.root.is_before_in_block(first):
            first = found.root
    for op in ([root_op] if root_op is not None else []) + views:
        if not op.is_before_in_block(first):
            op.move_before(first)
    call.erase()
    for found, written, written_type in plans:
        shape, strides, offset = written
        old = found.view.results[0] if found.view is not None else found.root.results[0]
        with ir.InsertionPoint(found.call):
            view = memref.reinterpret_cast(written_type, dest, [], [], [], [offset], shape,
                                           strides)
        old.replace_all_uses_with(view)
        set_argument_type(found.kernel, found.index, written_type)
        for op in [found.view] + found.chain if found.view is not None else found.chain:
            op.erase()
        found.root.erase()
    calls[name] -= 1
    functions.pop(name).erase()


def apply(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        calls = call_counts(module)
        graph = irutil.graph_function(module)
        for call in list(irutil.body(graph).operations):
            call = call.operation
            if call.name == "func.call" and len(call.operands) >= 3:
                _fold(call, functions, calls, graph)


@register
@dataclass
class DnnConcatViews(DnncPass):
    NAME = "dnn-concat-views"

    def run(self, module):
        apply(module)

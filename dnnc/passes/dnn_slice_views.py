"""dnn-slice-views: a slice copy that only feeds attention kernels (directly,
through reshape views, or through a transpose that dnn-transpose-views makes
a view) becomes a view of the sliced buffer instead of a copy.

Attention written the PyTorch way splits one projection into q, k and v
(``qkv.split(C, dim=-1)``), views each as ``[B, S, H, D]`` and transposes
it to ``[B, H, S, D]``. Bufferized, each split is a copy kernel
(``memref.subview`` of the projection, ``linalg.copy`` into a fresh buffer);
dnn-transpose-views already folds the transposes. A slice of a buffer is a
view of it, an offset and the buffer's strides (the subview's own layout),
and the attention kernels read q, k and v in any such layout whose rows TMA
can step (tensorcore/attention.py's ``rows_problem``: D contiguous, other
strides multiples of 16 bytes, a 16-byte aligned start). So the copy goes
and the destination becomes a ``memref.reinterpret_cast`` of the source
with the subview's layout. Should some reader not take the view (a start
that is not 16-byte aligned), the copy stays and its plan reason says why.

Run after the dnn-layout-views / dnn-io-strides group and before
dnn-transpose-views, on the bufferized graph function. A call is folded
when:

* its callee is a kernel whose body is ``memref.subview`` of argument 0
  (static offsets, sizes and strides, no rank change) copied by
  ``linalg.copy`` into argument 1, and is called once;
* the destination is a row-major ``memref.alloc`` of the graph function,
  and every other use of it is a reshape view (``memref.expand_shape``;
  a ``collapse_shape`` whose groups stay contiguous) whose uses qualify in
  turn, an attention kernel's argument it only reads (a layout-free reader,
  dnn_io_strides.layout_free_reader, carrying ``dnn.attention``), or the
  source of a transpose copy that dnn-transpose-views folds
  (``input_fold``: its own destination only layout-free kernels read);
* every attention kernel reached takes the view it would get;
* nothing after the slice writes the sliced buffer (every later kernel
  call only reads it), so the view holds what the copy would have.

Before::

    %p = memref.alloc() : memref<260x256xbf16>
    call @g_k1_tensor(%qkv, %p)   // subview %qkv[0, 256] [260, 256] [1, 1], copy
    %e = memref.expand_shape %p [[0, 1], [2, 3]] ... into memref<2x130x4x64xbf16>
    %t = memref.alloc() : memref<2x4x130x64xbf16>
    call @g_k2_tensor(%e, %t)     // transpose [0, 2, 1, 3]
    call @g_k3_sdpa(%q, %t, %v, %o)

After (and dnn-transpose-views after it)::

    %p = memref.reinterpret_cast %qkv to offset: [256], sizes: [260, 256],
        strides: [768, 1] : ... to memref<260x256xbf16, strided<[768, 1], offset: 256>>
    %e = memref.expand_shape %p ... into memref<2x130x4x64xbf16,
        strided<[99840, 768, 64, 1], offset: 256>>
    %t = memref.reinterpret_cast %e to offset: [256], sizes: [2, 4, 130, 64],
        strides: [99840, 64, 768, 1] : ...
    call @g_k3_sdpa(%q, %t, %v, %o)

The slice kernel is erased.

Lit test: test/lit/passes/dnn_slice_views.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.attention import ATTR as ATTENTION
from dnnc.passes import DnncPass, register
from dnnc.passes.dnn_io_strides import call_counts, layout_free_reader, retype_views, \
    set_argument_type
from dnnc.passes.dnn_transpose_views import attention_problem, copy_permutation, input_fold, \
    keep, only_read, permuted, strided_type

RESHAPES = ("memref.expand_shape", "memref.collapse_shape")


def slice_of(callee):
    """The memref type of the subview that ``callee`` copies whole into its
    argument 1 (a slice of its argument 0 with a static layout, the rank
    kept), or None when it does anything else."""
    args = list(irutil.body(callee).arguments)
    ops = [op.operation for op in irutil.body(callee).operations]
    if len(args) != 2 or len(ops) != 3 or ops[0].name != "memref.subview" or \
            ops[1].name != "linalg.copy" or ops[2].name != "func.return":
        return None
    subview, copy = ops[0], ops[1]
    if subview.operands[0] != args[0] or len(subview.operands) != 1 or \
            list(copy.operands) != [subview.results[0], args[1]]:
        return None
    view, dest = ir.MemRefType(subview.results[0].type), ir.MemRefType(args[1].type)
    if list(view.shape) != list(dest.shape) or view.element_type != dest.element_type:
        return None
    try:
        _, strides, offset = irutil.memref_geometry(view)
    except (ValueError, RuntimeError):
        return None
    if any(view.is_dynamic_stride_or_offset(v) for v in list(strides) + [offset]):
        return None
    return view


def _reshaped(op, geometry):
    """The (shape, strides, offset) of reshape view ``op``'s result when its
    source has ``geometry``; None where a collapsed group is not one run of
    memory."""
    shape, strides, offset = geometry
    out_shape = list(ir.MemRefType(op.results[0].type).shape)
    groups = [irutil.int_list(g) for g in ir.ArrayAttr(op.attributes["reassociation"])]
    out = [0] * len(out_shape)
    if op.name == "memref.expand_shape":
        for src, group in enumerate(groups):
            step = strides[src]
            for d in reversed(group):
                out[d] = step
                step *= out_shape[d]
        return out_shape, out, offset
    for dst, group in enumerate(groups):
        moving = [d for d in group if shape[d] != 1] or group
        for inner, outer in zip(moving[1:], moving[:-1]):
            if strides[outer] != strides[inner] * shape[inner]:
                return None
        out[dst] = strides[moving[-1]]
    return out_shape, out, offset


class _Readers:
    """What the view of one slice reaches: the attention kernels that read
    it, each with the (shape, strides, offset) its argument gets, directly
    or through a transpose copy that dnn-transpose-views folds."""

    def __init__(self, functions, calls):
        self.functions, self.calls = functions, calls
        self.kernels, self.types = [], []
        # (call, (kernel, argument index)) of the calls that pass the view
        # itself (an attention kernel's, a transpose copy's).
        self.direct = []

    def _callee(self, call):
        return self.functions[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]

    def walk(self, value, geometry, skip=None):
        """Collect the readers of ``value`` viewed with ``geometry``; False
        when some use is none of those the module docstring lists."""
        for use in value.uses:
            op = use.owner.operation
            if skip is not None and op == skip:
                continue
            if op.name in RESHAPES and use.operand_number == 0:
                reshaped = _reshaped(op, geometry)
                if reshaped is None or not self.walk(op.results[0], reshaped):
                    return False
                continue
            if op.name != "func.call":
                return False
            found = layout_free_reader(use, self.functions, self.calls)
            if found is not None and ATTENTION in found[0].attributes and \
                    only_read(*found):
                self.kernels.append(found)
                self.types.append(geometry)
                self.direct.append((op, found))
                continue
            fold = input_fold(op, self.functions, self.calls) \
                if len(op.operands) == 2 and use.operand_number == 0 else None
            if fold is None:
                return False
            perm, _, readers = fold
            # Retyping the copy's argument must change no other call.
            if self.calls[irutil.symbol(self._callee(op))] != 1 or \
                    not all(ATTENTION in target.attributes for target, _ in readers):
                return False
            self.direct.append((op, (self._callee(op), 0)))
            self.kernels += readers
            self.types += [permuted(geometry, perm)] * len(readers)
        return True


SOURCE_VIEWS = RESHAPES + ("memref.reinterpret_cast", "memref.subview")


def _root(value):
    """The buffer ``value`` is a view of (or is)."""
    op = irutil.defining_op(value)
    while op is not None and op.name in SOURCE_VIEWS:
        value = op.operands[0]
        op = irutil.defining_op(value)
    return value


def _unchanged_after(value, call, functions):
    """True when nothing after ``call`` writes ``value`` or a view of it:
    every later kernel call only reads it, so that a view read later sees
    what the slice copy would have copied."""
    for use in value.uses:
        op = use.owner.operation
        if op == call:
            continue
        if op.name in SOURCE_VIEWS and use.operand_number == 0:
            if not _unchanged_after(op.results[0], call, functions):
                return False
            continue
        if op.block == call.block and op.is_before_in_block(call):
            continue
        if op.name != "func.call":
            return False
        target = functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if target is None or not _reads(target, use.operand_number):
            return False
    return True


def _reads(target, index):
    """True when kernel ``target`` only reads its argument ``index``: an
    input of its linalg ops, or the source of a slice or transpose copy."""
    if only_read(target, index):
        return True
    return index == 0 and (slice_of(target) is not None or
                           copy_permutation(target) is not None)


def _fold(call, functions, calls, body):
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = functions.get(name)
    view_type = None if callee is None or calls.get(name) != 1 else slice_of(callee)
    if view_type is None:
        return
    source, dest = call.operands
    alloc = irutil.defining_op(dest)
    if alloc is None or alloc.name != "memref.alloc" or alloc.block != body:
        return
    if not _unchanged_after(_root(source), call, functions):
        return
    geometry = irutil.memref_geometry(view_type)
    readers = _Readers(functions, calls)
    if not readers.walk(dest, geometry, skip=call) or not readers.kernels:
        return
    element = view_type.element_type
    why = attention_problem(readers.kernels,
                            [strided_type(g, element) for g in readers.types])
    if why:
        keep(callee, why)
        return
    shape, strides, offset = geometry
    with ir.InsertionPoint(alloc):
        view = memref.reinterpret_cast(view_type, source, [], [], [], [offset], shape, strides)
    dest.replace_all_uses_with(view)
    retype_views(view)
    # Each call on the way now passes a strided memref: the attention
    # kernels read it as it lies, the transpose copies read their source
    # so (dnn-transpose-views then folds them).
    for op, (target, index) in readers.direct:
        set_argument_type(target, index, op.operands[index].type)
    call.erase()
    alloc.erase()
    calls[name] -= 1
    functions.pop(name).erase()


def apply(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        calls = call_counts(module)
        body = irutil.body(irutil.graph_function(module))
        for call in list(body.operations):
            call = call.operation
            if call.name == "func.call" and len(call.operands) == 2:
                _fold(call, functions, calls, body)


@register
@dataclass
class DnnSliceViews(DnncPass):
    NAME = "dnn-slice-views"

    def run(self, module):
        apply(module)

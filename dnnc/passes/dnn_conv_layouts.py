"""dnn-conv-layouts: give every activation and filter a tensor-core
convolution reads or writes the channels-last layout its kernel takes.

A tensor-core convolution (a kernel configured tc-sm90 or tc-sm80 whose
function carries ``dnn.conv``, dnnc/codegen/gpu/tensorcore/conv.py) reads x,
dy, the filter and a residual, and writes its output, channels-last: logical
``[N, C, *spatial]`` with C contiguous, then the spatial dims, then N
(strides ``[HWC, 1, WC, C]``; a filter KRSC). dnn-io-strides passes graph
inputs and outputs declared so as they are. Any other buffer of rank 4 or 5
with more than one dim of more than one element that is not channels-last
gets it here:

* an **intermediate** (a ``memref.alloc`` of the graph function) whose every
  user is a call of a kernel, called once, that reads and writes any layout
  (another tensor-core convolution; tc-sm90 and tc-sm80 reading it, or
  simt-window, simt-transpose and simt-generic reading or writing it) is
  allocated channels-last: an alloc in memory order ``[N, *spatial, C]`` and
  a ``memref.reinterpret_cast`` of it to the logical dims, which every user
  takes (their arguments retyped). So consecutive convolutions pass
  channels-last activations without a copy, as do a pooling or a fallback
  kernel between them;
* an **input of the epilogue broadcast** along some of the output's dims
  (a ``[1, K, H, W]`` table, an ``[N, K, 1, 1]`` scale) stays as it is: the
  implicit GEMM's epilogue reads it in any layout (a split view,
  tensorcore/conv_views.py), and a layout kernel would cost a launch;
* **anything else** (a graph input or output without channels-last strides,
  an intermediate another kernel needs row-major) is copied: the
  convolution reads or writes its own channels-last buffer, and a layout
  kernel before it (for what it reads) or after it (for what it writes)
  moves the elements between the two layouts: a transpose
  (``simt-transpose``, 64 x 64 tiles through shared memory) when the other
  buffer is row-major, else a copy. The plan shows that kernel, named
  ``<graph>_layout_<n>``.

Run after dnn-transpose-views and before dnn-default-config, on the
bufferized graph function.

Before (x a row-major NCHW graph input)::

    call @g_k0_conv_fprop(%x, %w, %y)     // tc-sm90, dnn.conv

After::

    %0 = memref.alloc() : memref<2x6x6x16xbf16>
    %1 = memref.reinterpret_cast %0 to offset: [0], sizes: [2, 16, 6, 6],
        strides: [576, 1, 96, 16] : ... to memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>
    call @g_layout_0(%x, %0)              // NCHW -> NHWC, simt-transpose
    call @g_k0_conv_fprop(%1, %w, %y)     // its argument retyped

Lit test: test/lit/passes/dnn_conv_layouts.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil, outline
from dnnc.codegen.gpu.tensorcore import conv as conv_match
from dnnc.heuristics.config import Config
from dnnc.passes import DnncPass, register
from dnnc.passes.dnn_io_strides import IMPLICIT_GEMM, TRANSPOSE, call_counts, set_argument_type
from dnnc.passes.dnn_transpose_views import copy_permutation, drop_call, permuted

CONV_STRATEGIES = ("tc-sm90", "tc-sm80")
# Strategies whose kernels read (and write) a buffer in any layout.
READ_ANY = ("tc-sm90", "tc-sm80", "simt-window", "simt-transpose", "simt-depthwise",
            "simt-generic")
WRITE_ANY = ("simt-window", "simt-transpose", "simt-depthwise", "simt-generic")
RESHAPES = ("memref.collapse_shape", "memref.expand_shape")
VIEWS = RESHAPES + ("memref.reinterpret_cast", "memref.subview")


def channels_last_order(rank):
    """The logical dims ``[N, C, *spatial]`` in channels-last memory order."""
    return [0] + list(range(2, rank)) + [1]


def _channels_last(shape, element, pitch):
    """Channels-last strides of logical ``shape``, pixels ``pitch``
    elements apart."""
    strides, step = [0] * len(shape), 1
    for d in reversed(channels_last_order(len(shape))):
        strides[d] = step
        step *= pitch if d == 1 else shape[d]
    return ir.MemRefType.get(list(shape), element, layout=ir.StridedLayoutAttr.get(0, strides))


def _target(t):
    """The channels-last type a convolution needs for buffer type ``t``
    (rank 4 or 5, two or more dims that move), or None when ``t`` is one
    already: C contiguous, then the spatial dims, then N, dense but for the
    pixels' pitch. No pitch is padded: a convolution whose pixels TMA
    cannot step (C = 3 or 63 16-bit channels) runs on tc-sm80, whose loader
    reads them where they lie and zero-fills past C (sm80/loader.py), or
    folds its filter's columns into its channels (tensorcore/fold.py)."""
    if t.rank not in (4, 5):
        return None
    shape, strides, _ = irutil.memref_geometry(t)
    order = channels_last_order(t.rank)
    moving = [d for d in order if shape[d] != 1]
    if len(moving) < 2:
        return None
    spatial = [d for d in moving if d != 1]
    pitch = strides[spatial[-1]] if spatial else shape[1]
    have = irutil.memref_geometry(_channels_last(shape, t.element_type, pitch))[1]
    if pitch >= shape[1] and all(strides[d] == have[d] for d in moving):
        return None
    return _channels_last(shape, t.element_type, shape[1])


def _physical(t):
    """The row-major buffer under channels-last type ``t``: its dims in
    channels-last order."""
    shape = list(ir.MemRefType(t).shape)
    return ir.MemRefType.get([shape[d] for d in channels_last_order(t.rank)], t.element_type)


def _broadcast_input(fn, index):
    """Whether argument ``index`` of convolution kernel ``fn`` is an input
    of its epilogue broadcast along some dim of an output (a ``[1, K, P,
    Q]`` table, an ``[N, K, 1, 1]`` scale): the implicit GEMM's epilogue
    reads it in any layout through a split view (tensorcore/conv_views.py),
    and it is smaller than the output, so a layout kernel would cost a
    launch and a pass over it to save the epilogue little. A full-size
    input (a residual) is still laid out channels-last: read NCHW, each
    warp's loads would cut across its rows."""
    if _writes(fn, index):
        return False
    args = list(irutil.body(fn).arguments)
    shape = list(ir.MemRefType(args[index].type).shape)
    outputs = [list(ir.MemRefType(a.type).shape) for i, a in enumerate(args)
               if _writes(fn, i) and ir.MemRefType(a.type).rank == len(shape)]
    return any(any(n == 1 and m > 1 for n, m in zip(shape, out)) for out in outputs)


def _op(owner):
    return getattr(owner, "operation", owner)


def is_conv(fn, config):
    return config is not None and config.strategy in CONV_STRATEGIES and \
        IMPLICIT_GEMM in fn.attributes


def _writes(fn, index):
    if "arg_attrs" not in fn.attributes:
        return False
    return "bufferize.result" in ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[index])


class _Layouts:
    def __init__(self, module):
        self.module = module
        self.fn = irutil.graph_function(module)
        self.graph = irutil.symbol(self.fn)
        self.functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        self.calls = call_counts(module)
        self.made = 0

    def callee(self, call):
        return self.functions.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)

    def run(self):
        for call in list(irutil.ops(self.fn, "func.call")):
            callee = self.callee(call)
            if callee is None or self.calls[irutil.symbol(callee)] != 1 or \
                    not is_conv(callee, Config.of_kernel(callee)):
                continue
            operands = [i for i in irutil.int_list(
                ir.DictAttr(callee.attributes[IMPLICIT_GEMM])["operands"]) if i >= 0]
            if self.grouped_out(callee, call, operands):
                continue            # simt-generic will run it where it lies
            for index, value in enumerate(list(call.operands)):
                t = value.type
                if not isinstance(t, ir.MemRefType) or not ir.MemRefType(t).has_static_shape:
                    continue
                target = _target(ir.MemRefType(t))
                if target is None or self.reallocate(value, target):
                    continue
                if index not in operands and _broadcast_input(callee, index):
                    continue        # the epilogue reads it where it lies
                self.copy(call, callee, index, value, target)

    @staticmethod
    def grouped_out(callee, call, operands):
        """Whether the convolution's groups keep it off the tensor cores
        (tensorcore/conv.groups_problem: a depthwise convolution)."""
        attrs = ir.DictAttr(callee.attributes[IMPLICIT_GEMM])
        groups = ir.IntegerAttr(attrs["groups"]).value
        if groups == 1 or len(operands) != 2:
            return False
        direction = ir.StringAttr(attrs["direction"]).value
        x = ir.MemRefType(call.operands[operands[0]].type)
        config = Config.of_kernel(callee)
        bk = config.tile[2] if len(config.tile) > 2 else \
            128 // irutil.element_bytes(x.element_type)
        return conv_match.groups_problem(direction, groups, x.shape[1] // groups,
                                         bk) is not None

    def adaptable(self, use):
        """(kernel, argument index) of ``use`` when it is an operand of a
        call to a kernel, called once, that takes any layout for it."""
        op = use.owner
        if op.name != "func.call":
            return None
        callee = self.callee(op)
        config = None if callee is None else Config.of_kernel(callee)
        if config is None or self.calls[irutil.symbol(callee)] != 1:
            return None
        index = use.operand_number
        if is_conv(callee, config):
            return callee, index
        allowed = WRITE_ANY if _writes(callee, index) else READ_ANY
        return (callee, index) if config.strategy in allowed else None

    def reallocate(self, value, strided):
        """Allocate intermediate ``value`` as ``strided`` (channels-last)
        when every user takes it; False when it is not such a buffer."""
        op = irutil.defining_op(value)
        if op is None or op.name != "memref.alloc" or op.operands:
            return False
        if self.alias_copy(value, strided):
            return True
        users, copies = [], []
        for use in value.uses:
            copied = self.copied_to(value, strided, _op(use.owner))
            if copied is not None:
                copies.append(copied)
            else:
                users.append(self.adaptable(use))
        if not users + copies or None in users:
            return False
        with ir.InsertionPoint(op), op.location:
            physical = memref.alloc(_physical(strided), [], [])
            cast = self._view(physical, strided)
        value.replace_all_uses_with(cast)
        op.erase()
        for callee, index in users:
            set_argument_type(callee, index, strided)
        for call, dest in copies:
            drop_call(call, self.functions, self.calls)
            dest.replace_all_uses_with(physical)
            irutil.defining_op(dest).erase()
        return True

    def copied_to(self, value, strided, call):
        """The other way round from ``alias_copy``: (the copy, its
        destination) when ``call`` is a permutation copy of ``value``,
        were it laid out ``strided`` (channels-last, a view of its
        row-major physical buffer), into an intermediate whose row-major
        layout is that physical buffer's (a filter gradient's dw' read as
        [K, *window, C]: dnn-widen-groups): the destination can be the
        physical buffer itself and the copy can go. The destination must
        be read only after the copy, and ``value`` written only before it;
        ``value`` may still be read after it (a data gradient that the next
        data gradient's epilogue adds as its residual, copied for a
        batchnorm backward's rows view) when nothing after the copy writes
        either of them, as the two are then one buffer. None otherwise."""
        if call.name != "func.call" or len(call.operands) != 2 or call.operands[0] != value:
            return None
        callee = self.callee(call)
        perm = None if callee is None else copy_permutation(callee)
        dest = call.operands[1]
        alloc = irutil.defining_op(dest)
        if perm is None or alloc is None or alloc.name != "memref.alloc" or alloc.operands:
            return None
        geometry = permuted(irutil.memref_geometry(strided), perm)
        shape, strides, offset = irutil.memref_geometry(dest.type)
        if list(geometry) != [shape, strides, offset] or \
                ir.MemRefType(_physical(strided)).shape != shape:
            return None
        body = irutil.body(self.fn)
        later = [u for u in dest.uses if _op(u.owner) != call]
        others = [u for u in value.uses if _op(u.owner) != call]
        if any(_op(u.owner).block != body for u in later + others) or \
                any(not call.is_before_in_block(_op(u.owner)) for u in later):
            return None
        after = [u for u in others if call.is_before_in_block(_op(u.owner))]
        if after and not (self.reads_only(after) and self.reads_only(later)):
            return None
        return call, dest

    def reads_only(self, uses):
        """Whether each of ``uses`` (through views of the buffer) is an
        argument of a kernel call that reads it and does not write it."""
        for use in uses:
            op = _op(use.owner)
            if op.name in VIEWS:
                if not self.reads_only(list(op.results[0].uses)):
                    return False
                continue
            callee = self.callee(op) if op.name == "func.call" else None
            if callee is None or _writes(callee, use.operand_number):
                return False
        return True

    def alias_copy(self, value, strided):
        """When intermediate ``value`` is written by a permutation copy
        (a transpose kernel) of an intermediate whose memory, read through
        the permutation, is already ``strided`` (a channels-last filter
        computed as [K, *window, C] and transposed to [K, C, *window]:
        dnn-widen-groups), the copy would move every element to where it
        is: ``value`` becomes a view of the copy's source and the copy
        goes. The source must be written only before the copy."""
        uses = list(value.uses)
        copies = [_op(use.owner) for use in uses if use.owner.name == "func.call"
                  and use.operand_number == 1 and len(use.owner.operands) == 2]
        if len(copies) != 1:
            return False
        call = copies[0]
        callee = self.callee(call)
        perm = None if callee is None else copy_permutation(callee)
        source = call.operands[0]
        # The source, or the reshapes (views) of an intermediate it reads.
        chain, root = [source], source
        while irutil.defining_op(root) is not None and \
                irutil.defining_op(root).name in RESHAPES:
            root = irutil.defining_op(root).operands[0]
            chain.append(root)
        alloc = irutil.defining_op(root)
        if perm is None or alloc is None or alloc.name != "memref.alloc":
            return False
        body = irutil.body(self.fn)
        views = [irutil.defining_op(v) for v in chain[:-1]]
        others = [_op(use.owner) for v in chain for use in v.uses
                  if _op(use.owner) != call and _op(use.owner) not in views]
        if any(o.block != body or not o.is_before_in_block(call) for o in others):
            return False
        try:
            geometry = permuted(irutil.memref_geometry(source.type), perm)
        except (ValueError, RuntimeError):
            return False
        if list(geometry) != list(irutil.memref_geometry(strided)):
            return False
        # Every other user takes the view (the copy's own strategy does not
        # matter: it goes).
        readers = [self.adaptable(use) for use in uses if _op(use.owner) != call]
        if not readers or None in readers:
            return False
        with ir.InsertionPoint.after(irutil.defining_op(source)), alloc.location:
            view = memref.reinterpret_cast(strided, source, [], [], [], [geometry[2]],
                                           geometry[0], geometry[1])
        drop_call(call, self.functions, self.calls)
        value.replace_all_uses_with(view)
        value.owner.erase()
        for target, index in readers:
            set_argument_type(target, index, strided)
        return True

    @staticmethod
    def _view(buffer, strided):
        t = ir.MemRefType(strided)
        strides, _ = t.get_strides_and_offset()
        return memref.reinterpret_cast(strided, buffer, [], [], [], [0], list(t.shape),
                                       list(strides))

    def copy(self, call, callee, index, value, strided):
        """The convolution reads or writes a channels-last buffer of its
        own (``strided``), moved from or to ``value`` by a layout kernel: a
        transpose between row-major buffers, else a copy between the two
        strided views."""
        t = ir.MemRefType(value.type)
        writes = _writes(callee, index)
        physical_type = _physical(strided)
        dense = irutil.memref_geometry(t)[1] == irutil.row_major_strides(list(t.shape))
        with ir.InsertionPoint(call), call.location:
            physical = memref.alloc(physical_type, [], [])
            view = self._view(physical, strided)
        other = physical if dense else view
        kernel = self.layout_kernel(t, ir.MemRefType(other.type), writes, dense)
        where = ir.InsertionPoint.after(call) if writes else ir.InsertionPoint(call)
        with where, call.location:
            outline.call(kernel, [other, value] if writes else [value, other])
        call.operands[index] = view
        set_argument_type(callee, index, strided)

    def layout_kernel(self, t, other, to_source, dense):
        """A kernel copying between buffer type ``t`` and ``other`` (``to_source``:
        from the latter): for ``dense``, ``other`` is the row-major buffer
        of ``t``'s dims in channels-last order and the copy a transpose
        (simt-transpose); else the channels-last view of ``t``'s dims and
        the copy direct."""
        base = f"{self.graph}_layout_{self.made}"
        self.made += 1
        source, dest = (other, t) if to_source else (t, other)
        if dense:
            # Loops over the destination's dims, the source read through the
            # permutation between the two (physical dim l is logical dim order[l]).
            order = channels_last_order(t.rank)
            read = list(order) if to_source else [order.index(d) for d in range(t.rank)]
            kernel = outline.permuted_copy_kernel(self.module, base, source, dest, read)
            kernel.attributes["dnn.config"] = Config(TRANSPOSE, (256, 1, 1)).to_attr()
            what = "the row-major one"
        else:
            kernel = outline.copy_kernel(self.module, base, source, dest)
            what = "its own strides"
        kernel.attributes["dnn.config_reason"] = ir.StringAttr.get(
            "created by dnn-conv-layouts after the heuristics: moves a tensor-core "
            f"convolution's operand between its channels-last layout and {what}")
        name = irutil.symbol(kernel)
        self.functions[name] = kernel
        self.calls[name] = 1
        return kernel


def apply(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        _Layouts(module).run()


@register
@dataclass
class DnnConvLayouts(DnncPass):
    NAME = "dnn-conv-layouts"

    def run(self, module):
        apply(module)

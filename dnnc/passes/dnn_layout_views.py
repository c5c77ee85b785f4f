"""dnn-layout-views: a copy kernel between a graph input or output and a
buffer that holds the same elements in the same memory order becomes a view.

A channels-last tensor (logical N x C x H x W, strides [HWC, 1, WC, C]) is,
in memory, a row-major N x H x W x C array. Decompositions that work along
the memory order (a batchnorm's column sums over N*H*W x C, dnnc/decompose/
norm.py) read such an input through ``transpose(x, [0, 2, 3, 1])`` and write
such an output through the inverse transpose. Bufferized, each transpose is
a copy kernel, and dnn-io-strides would add a second copy between the
strided argument and a row-major NCHW buffer. Both move nothing: the
transposed buffer *is* the argument's memory. Likewise a graph result that
is a reshape of a kernel's result (a per-channel statistic computed as
1 x C and returned as 1 x C x 1 x 1) is a copy kernel between two row-major
buffers of one memory order.

Run after dnn-host-to-kernels and before dnn-io-strides, on the bufferized
graph function, and again after dnn-io-strides: a reshape kernel between
the row-major copy that dnn-io-strides makes of a strided input (an
attention output read as B x S x H x D) and a graph output is then a copy
between two row-major buffers of one memory order, and that copy writes
the output itself. A call is folded when its callee is a kernel whose body only
copies its first argument into its second, through a permutation (a
transpose, as dnn-transpose-views recognizes it) or through reshape views
and ``linalg.copy`` (a reshape), and every element keeps its address:

* **input**: the source is a graph argument (every use of which is such a
  call) with static ``dnn.strides``; the destination is a ``memref.alloc``
  that nothing but the call writes (its other users, through reshape views,
  are kernels that only read it). The alloc becomes a
  ``memref.reinterpret_cast`` of the argument, which takes its strided type
  (dnn-io-strides then leaves it alone);
* **output**: the destination is a graph output (``bufferize.result``) that
  only the call uses, or kernels read after it; the source is, through reshape views, a
  ``memref.alloc`` that after the call only kernels read. That alloc becomes
  a ``memref.reinterpret_cast`` of the output, so the kernels that fill it
  write the output's memory (and later readers read it there);
* **output read back**: the source is a graph output already of its
  declared strided type (dnn-io-strides gave it to the kernel that writes
  it: a convolution's output a training step saves), which nothing writes
  after the call; the destination is a ``memref.alloc`` that only kernels
  read (a batchnorm's column sums over the output's memory order). The
  alloc becomes a ``memref.reinterpret_cast`` of the output.

The copy kernel is erased when nothing else calls it.

Before (x declared with strides [60, 1, 15, 3])::

    func.func @g(%x: memref<2x3x4x5xf32> {dnn.strides = array<i64: 60, 1, 15, 3>}, ...) {
      %t = memref.alloc() : memref<2x4x5x3xf32>
      call @g_k0_tensor(%x, %t)          // transpose [0, 2, 3, 1]
      %v = memref.collapse_shape %t [[0, 1, 2], [3]]
      call @g_k1_reduction(%v, %s)

After::

    func.func @g(%x: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {...}, ...) {
      %t = memref.reinterpret_cast %x to offset: [0], sizes: [2, 4, 5, 3],
          strides: [60, 15, 3, 1] : ... to memref<2x4x5x3xf32>
      %v = memref.collapse_shape %t [[0, 1, 2], [3]]
      call @g_k1_reduction(%v, %s)

Lit test: test/lit/passes/dnn_layout_views.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.passes import DnncPass, register
from dnnc.passes.dnn_io_strides import call_counts, declared_strides, is_output, \
    layout_free_reader, set_argument_type
from dnnc.passes.dnn_transpose_views import copy_permutation, only_read

RESHAPES = ("memref.expand_shape", "memref.collapse_shape")


def _reshape_copy(callee):
    """True when ``callee`` only copies argument 0 into argument 1 through
    reshape views (both row-major: the linear order is kept)."""
    args = list(irutil.body(callee).arguments)
    ops = [op.operation for op in irutil.body(callee).operations]
    if len(args) != 2 or len(ops) < 2 or ops[-1].name != "func.return":
        return False
    value = args[0]
    for op in ops[:-2]:
        if op.name not in RESHAPES or op.operands[0] != value:
            return False
        value = op.results[0]
    copy = ops[-2]
    return copy.name == "linalg.copy" and list(copy.operands) == [value, args[1]] \
        and ir.MemRefType(value.type).element_type == ir.MemRefType(args[1].type).element_type


def _moves(callee):
    """How ``callee`` moves its argument 0 into argument 1: a permutation
    (source dim k is output dim p[k]; a reshape is the identity on the
    linear order: ``()``), or None when it does anything else."""
    if callee is None:
        return None
    perm = copy_permutation(callee)
    if perm is not None:
        return tuple(perm)
    return () if _reshape_copy(callee) else None


def _same_addresses(shape, source, dest, perm):
    """True when element i of a source of ``shape`` and strides ``source``,
    stored at dest index j (j[perm[k]] = i[k]) with strides ``dest``, keeps
    its address. Unit dims move nothing and are skipped."""
    return all(n == 1 or source[k] == dest[perm[k]] for k, n in enumerate(shape))


def _root_alloc(value, body):
    """The ``memref.alloc`` of ``body`` that ``value`` is a reshape view of
    (or is), with a row-major layout; None otherwise."""
    while True:
        op = irutil.defining_op(value)
        if op is None or op.block != body:
            return None
        if op.name == "memref.alloc":
            return op if _is_row_major(ir.MemRefType(value.type)) else None
        if op.name not in RESHAPES:
            return None
        value = op.operands[0]


def _dense(shape, strides):
    """True when ``strides`` are row-major for ``shape`` (unit dims aside)."""
    return all(n == 1 or s == r for n, s, r in
               zip(shape, strides, irutil.row_major_strides(shape)))


def _is_row_major(t):
    shape, strides, offset = irutil.memref_geometry(t)
    return offset == 0 and _dense(shape, strides)


def _users(value):
    """Every (user op, operand value) of ``value`` and of its reshape views."""
    out = []
    for use in value.uses:
        op = _operation(use.owner)
        if op.name in RESHAPES:
            out += _users(op.results[0])
        else:
            out.append((op, use.operand_number))
    return out


def _operation(op):
    return getattr(op, "operation", op)


def _alias(alloc, target):
    """Replace ``alloc`` by a row-major reinterpret_cast of ``target``."""
    t = ir.MemRefType(alloc.results[0].type)
    shape = list(t.shape)
    with ir.InsertionPoint(alloc), alloc.location:
        view = memref.reinterpret_cast(t, target, [], [], [], [0], shape,
                                       irutil.row_major_strides(shape))
    alloc.results[0].replace_all_uses_with(view)
    alloc.erase()


class _Folder:
    """Folds the copy calls of one graph function (see the module docstring)."""

    def __init__(self, module):
        self.functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        self.calls = call_counts(module)
        self.fn = irutil.graph_function(module)
        self.body = irutil.body(self.fn)

    def callee(self, call):
        if call.name != "func.call" or len(call.operands) != 2:
            return None
        return self.functions.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)

    def drop(self, call):
        name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
        call.erase()
        self.calls[name] -= 1
        if self.calls[name] == 0:
            self.functions.pop(name).erase()

    def strided(self, index, strides):
        """Give argument ``index`` its declared strided type."""
        t = ir.MemRefType(self.body.arguments[index].type)
        set_argument_type(self.fn, index, ir.MemRefType.get(
            list(t.shape), t.element_type, layout=ir.StridedLayoutAttr.get(0, strides)))

    def input_view(self, call, strides):
        """The destination alloc of a copy of the input at ``strides`` when
        it can be a view of it; None otherwise."""
        perm = _moves(self.callee(call))
        if perm is None:
            return None
        source, dest = call.operands
        alloc = irutil.defining_op(dest)
        if alloc is None or alloc.name != "memref.alloc" or \
                alloc.block != self.body or not _is_row_major(ir.MemRefType(dest.type)):
            return None
        shape = list(ir.MemRefType(source.type).shape)
        dense = irutil.row_major_strides(list(ir.MemRefType(dest.type).shape))
        if perm == () or not _same_addresses(shape, strides, dense, perm):
            return None
        if not all(op == call or self.reads(op, index) for op, index in _users(dest)):
            return None
        return alloc

    def reads(self, op, index):
        """True when ``op`` is a kernel call that only reads its operand ``index``."""
        if op.name != "func.call" or op.block != self.body:
            return False
        target = self.functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        return target is not None and only_read(target, index)

    def fold_input(self, index, arg, strides):
        """Make every copy of input ``index`` a view of it, or none."""
        calls = [_operation(use.owner) for use in arg.uses]
        if not calls or any(use.operand_number != 0 for use in arg.uses):
            return
        allocs = [self.input_view(c, strides) for c in calls]
        if any(a is None for a in allocs):
            return
        self.strided(index, strides)
        for call, alloc in zip(calls, allocs):
            _alias(alloc, arg)
            self.drop(call)

    def fold_output(self, index, arg, strides):
        """Make the buffer copied into output ``index`` a view of it. Besides
        the copy, the output may have readers after it (a relu's output
        that the next convolution reads and a training step saves)."""
        writes = [u for u in arg.uses if u.operand_number == 1 and
                  _operation(u.owner).name == "func.call" and
                  _moves(self.callee(_operation(u.owner))) is not None]
        if len(writes) != 1:
            return
        call = _operation(writes[0].owner)
        readers = []
        for use in arg.uses:
            op = _operation(use.owner)
            if op == call:
                continue
            if op.block != self.body or op.is_before_in_block(call):
                return
            # Retyped to the output's strides below: a kernel that reads any
            # layout (a convolution), called once, and does not write it.
            reader = layout_free_reader(use, self.functions, self.calls)
            if reader is None or is_output(*reader):
                return
            readers.append(reader)
        perm = _moves(self.callee(call))
        source = call.operands[0]
        t = ir.MemRefType(source.type)
        shape = list(t.shape)
        alloc = _root_alloc(source, self.body)
        if alloc is None or not _is_row_major(t):
            return
        layout = strides or irutil.row_major_strides(list(ir.MemRefType(arg.type).shape))
        if perm == ():
            if not _dense(list(ir.MemRefType(arg.type).shape), layout):
                return
        elif not _same_addresses(shape, irutil.row_major_strides(shape), layout, perm):
            return
        for op, operand in _users(alloc.results[0]):
            if op != call and (op.block != self.body or not op.is_before_in_block(call)) \
                    and not self.reads(op, operand):
                return
        if readers and (perm == () or strides is None):
            return
        if perm != () and strides is not None:
            self.strided(index, strides)
            for callee, i in readers:
                set_argument_type(callee, i, self.body.arguments[index].type)
        _alias(alloc, arg)
        self.drop(call)

    def fold_read_back(self, arg):
        """Make each alloc that a copy fills from output ``arg`` (already of
        its declared strided type), after the kernels that write it, a view
        of it when it holds the elements in the output's memory order: a
        convolution's output that a batchnorm's column sums read back as
        (N*H*W, C) (dnnc/decompose/batchnorm.py)."""
        shape, strides, offset = irutil.memref_geometry(arg.type)
        if offset != 0:
            return
        for use in list(arg.uses):
            call = _operation(use.owner)
            if use.operand_number != 0 or call.block != self.body:
                continue
            perm = _moves(self.callee(call))
            if perm is None:
                continue
            dest = call.operands[1]
            alloc = irutil.defining_op(dest)
            if perm == () or alloc is None or alloc.name != "memref.alloc" \
                    or alloc.block != self.body or \
                    not _is_row_major(ir.MemRefType(dest.type)):
                continue
            dense = irutil.row_major_strides(list(ir.MemRefType(dest.type).shape))
            if not _same_addresses(shape, strides, dense, perm):
                continue
            if not all(op == call or self.reads(op, i) for op, i in _users(dest)):
                continue
            # Nothing may write the output once the copy has read it.
            if not all(op == call or op.is_before_in_block(call) or self.reads(op, i)
                       for op, i in _users(arg) if op.block == self.body):
                continue
            _alias(alloc, arg)
            self.drop(call)

    def run(self):
        for index, arg in enumerate(list(self.body.arguments)):
            if not isinstance(arg.type, ir.MemRefType):
                continue
            _, strides = declared_strides(self.fn, index)
            if is_output(self.fn, index):
                self.fold_output(index, arg, strides)
                if strides is not None and arg.uses:
                    self.fold_read_back(arg)
            elif strides is not None:
                self.fold_input(index, arg, strides)
        # The reshape views only a dropped call read.
        dead = True
        while dead:
            dead = [op.operation for op in self.body.operations
                    if op.operation.name in RESHAPES and not list(op.results[0].uses)]
            for op in dead:
                op.erase()


def apply(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        _Folder(module).run()


@register
@dataclass
class DnnLayoutViews(DnncPass):
    NAME = "dnn-layout-views"

    def run(self, module):
        apply(module)

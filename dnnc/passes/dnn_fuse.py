"""dnn-fuse: outline each kernel-to-be into a private function.

The dnn ops of a graph function (the one marked ``dnn.graph``, else every public
function that is not a kernel) are split into groups; each group becomes a
``func.func private @<graph>_k<N>_<anchor>`` marked ``dnn.kernel`` and
``dnn.anchor = "<anchor>"``, and the graph function keeps only ``func.call``s.

Grouping, in program order:

* anchors start a kernel of their own, named after the op: matmul, conv_fprop,
  conv_dgrad, conv_wgrad, sdpa, sdpa_backward, every norm and norm backward,
  softmax and log_softmax (and their backward), reduction, pooling,
  pooling_backward, concat (and any other non-pointwise op); a concat whose
  operand is another concat's result along the same axis, and that
  result's only use, joins that kernel (a chain of concats is one);
* epilogue (option ``epilogue``): a pointwise op (cast included) joins a matmul,
  conv, softmax, log_softmax, layernorm, rmsnorm or pooling kernel when it
  uses the kernel's chain tip (the
  anchor's result, then the last op that joined) and is that value's only user
  (for a matmul or a convolution: its only user but for the graph's return,
  so that a returned pre-activation is a second output of the GEMM's
  epilogue). Its other
  operands (bias, residual) become kernel arguments;
* amax (option ``epilogue``): a reduction in mode amax over every axis of
  the chain tip of an fp8 matmul's kernel (both operands fp8) joins the
  kernel, and the tip stays where it was, so the chain goes on past it (the
  output scaled and cast after the amax of its unscaled value, as
  Transformer Engine records it): tc-sm90's GEMM takes the largest |value|
  as its epilogue computes them, and the value is not stored for a
  reduction kernel to read again. The tip's other user may then join as if
  it were the only one. Only fp8: a bf16 or f16 GEMM may run on tc-sm80,
  whose epilogue takes no amax;
* rows: a reduction of the trailing axes that keeps them (``rows x 1``, a
  row program for simt-reduce; the innermost axis alone, or several, as
  groupnorm's (sample, group) rows of channels x positions) takes pointwise
  ops over its rows on both
  sides: its chain tip extends as an epilogue does (``dy - sum(dy * y)``),
  and a pointwise kernel over the reduced tensor's shape that feeds only it
  joins it (``dy * y`` before the sum, ``exp(y)`` beside it), so that a
  decomposed softmax backward is one kernel. Beyond the chain (a norm
  backward's dx is a graph, not a chain): a row reduction joins the kernel
  making its operand when that is a row kernel over the same rows or a
  pointwise kernel over them (which becomes a row kernel), else a row kernel
  over the same rows that reads the same operand (``sum(dy)`` beside
  ``sum(dy * x)``); a pointwise op over the rows (a whole row or a value per
  row; operands broadcast to the rows) joins the row kernels it reads, with
  the pointwise kernels over those rows that it reads, or, reading none, a
  row kernel that reads one of its operands;
* columns: a reduction over leading dims that keeps them (``1 x N``, a
  column program) recomputes the pointwise ops over its operand's shape
  that compute that operand (``dy * xhat`` from dy, x, mean and inv) rather
  than reading them from another kernel; those that nothing else needs are
  placed with it alone. Not an op that ends a contraction's epilogue chain
  (a gelu backward on a GEMM's dx, whose bias gradient sums it): the GEMM
  stores that op's result anyway, and recomputing it would make the GEMM
  store its raw output too. Reductions over the same columns share a kernel
  (dscale beside dbias), and a pointwise op over the reduced shape that reads
  one (the cast to the output's type) joins it;
* rows and columns: once every op is placed, a column kernel joins a row
  kernel over the rows it sums (R x N, R > 1, N > 1) that reads or computes
  everything it reads, when its f32 sums of a row take at most
  COLUMN_SUMS_BYTES (N x 4 bytes per reduction): a norm backward's dscale
  and dbias join its dx, and one pass over dy and x makes all three (a
  row-and-column program). Longer rows keep the two kernels;
* prologue (option ``prologue``): an ``add`` whose result feeds a layernorm or
  rmsnorm as x and is otherwise only returned joins the norm's kernel;
* operand prologue (option ``matmul_prologue``): a chain of cheap pointwise
  ops (OPERAND_PROLOGUE: a cast, relu, abs, a scale or shift by a constant)
  that computes a matmul operand from one tensor of the same shape, each op
  used only by the next and the last only by the matmul, joins the matmul's
  kernel when the operand is reused little (PROLOGUE_MAX_N, _M): the GEMM
  applies the ops to each operand tile it loads, and the operand is never
  stored. A tile of A is loaded once per column of output tiles (N / 256
  times), a tile of B once per row of them (M / 128), and converted each
  time, so fusing pays where that reuse is low (a skinny matmul's weight)
  and costs where it is high; an exp or gelu costs more still;
* convolution prologue (option ``conv_prologue``): a chain of those cheap
  ops whose other operands are per-channel tensors (``[1, C, 1, 1]``: a
  batchnorm folded to scale and shift) or scalar constants, computing a
  forward convolution's x from one tensor of its shape, each op used only
  by the next and the last only by the convolution, joins the
  convolution's kernel when tc-sm90 runs it (conv_prologue.fusion_problem:
  bf16 / f16, C a multiple of 8, whole K steps a group, a pixel box TMA's
  im2col mode describes): cuDNN's BN-ReLU-conv in one kernel, the
  activation never stored. An op whose other operand is not per channel
  (a scale that varies along a spatial dim) stops the chain there, and
  the convolution's kernel says so in ``dnn.fusion_note``. The chain
  stops at a value with another user (a
  pre-activation that feeds a residual too): the ops that make it stay a
  kernel of their own, which stores it once, and only those after it join,
  so no work is done twice. Where tc-sm90 would not run the chain, the
  convolution's kernel says why in ``dnn.fusion_note`` (dnn-configure puts
  it in the plan's reason);
* bias gradient (option ``conv_bias_grad``): a sum of dy over every dim
  but its channels (a convolution's bias gradient) joins the kernel of a
  filter gradient that reads the same dy, before or after it in the graph,
  when tc-sm90 runs the pair (conv_bias_grad.fusion_problem: bf16 / f16,
  one group, K and C multiples of 8, a pixel box TMA's im2col mode
  describes): the GEMM's first column of tiles sums dy's tiles as it
  multiplies them, and dy is not read again. Where it does not join, the
  filter gradient's kernel says why in ``dnn.fusion_note`` (the option is
  off on sm_80: tc-sm80 computes no bias gradient);
* other pointwise ops join the pointwise kernels of their operands (one kernel
  per connected chain), else start one (anchor "pointwise");
* reshape, transpose and slice get one kernel each (anchor "tensor"), but for
  a reshape that is no graph result, or that reshapes the end of a
  contraction's epilogue chain (where dnn-sink-reshapes moved it, below the
  ops that joined the epilogue): it stays in the graph function, where
  bufferization makes it a view of its operand's buffer (it moves no data).
  A contraction kernel whose result is reshaped for a pointwise op that
  could not move above the reshape (an operand the epilogue cannot index
  across it) says why in ``dnn.fusion_note``;
  a transpose takes an epilogue (option ``epilogue``) of pointwise ops that
  read no other tensor (a cast, a relu, a scale by a constant), each the
  only user of the one before: the copy applies them to each element it
  moves;
* ``dnn.constant``s are cloned into every kernel that uses them.

A join that would make two kernels depend on each other is refused. A kernel
returns exactly the values used outside it (not those its users recompute);
calls are emitted in a topological order of the kernels, which is also the
numbering.

Before::

    func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>)
        -> tensor<8x32xf32> attributes {dnn.graph} {
      %0 = "dnn.matmul"(%x, %w) {compute_type = f32} : ...
      %1 = "dnn.add"(%0, %b) : ...
      %2 = "dnn.gelu"(%1) {approximate = "none"} : ...
      return %2 : tensor<8x32xf32>
    }

After::

    func.func private @main_k0_matmul(%arg0: tensor<8x16xf32>, %arg1: tensor<16x32xf32>,
        %arg2: tensor<32xf32>) -> tensor<8x32xf32>
        attributes {dnn.anchor = "matmul", dnn.kernel} {
      %0 = "dnn.matmul"(%arg0, %arg1) {compute_type = f32} : ...
      %1 = "dnn.add"(%0, %arg2) : ...
      %2 = "dnn.gelu"(%1) {approximate = "none"} : ...
      return %2 : tensor<8x32xf32>
    }
    func.func @main(...) -> tensor<8x32xf32> attributes {dnn.graph} {
      %0 = call @main_k0_matmul(%arg0, %arg1, %arg2) : (...) -> tensor<8x32xf32>
      return %0 : tensor<8x32xf32>
    }

Lit test: test/lit/passes/dnn_fuse.mlir.
"""

import heapq
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import func

from dnnc.codegen.gpu.tensorcore import conv_bias_grad
from dnnc.codegen.gpu.tensorcore.conv_prologue import fusion_problem
from dnnc.dialect.ops_pointwise import POINTWISE_OPS
from dnnc.dialect.ops_reduce import trailing_axes
from dnnc.errors import UnsupportedError
from dnnc.passes import DnncPass, register
from dnnc.passes import dnn_sink_reshapes as sink

POINTWISE = set(POINTWISE_OPS) | {"cast", "constant"}
TENSOR = {"reshape", "transpose", "slice"}
EPILOGUE_ANCHORS = {"matmul", "matmul_block_scaled", "conv_fprop", "conv_dgrad", "conv_wgrad",
                    "softmax", "log_softmax", "pooling", "layernorm", "rmsnorm"}
PROLOGUE_NORMS = {"layernorm", "rmsnorm"}
# Pointwise ops a matmul applies to its operand tiles as it loads them (a few
# instructions an element); the other operands of a binary one are constants.
OPERAND_PROLOGUE = {"cast", "relu", "leaky_relu", "abs", "neg", "add", "sub", "mul", "div",
                    "max", "min"}
# The largest N for a prologue on A (by the bytes of an element as stored)
# and M for one on B. Measured on an H200 (bf16 GEMMs, M x N x K, against a
# separate pointwise kernel and the GEMM, torch eager and torch.compile
# alike): relu(A) 4096 x 1024 x 4096 1.32x as fast, x 2048 1.09x, x 4096
# 1.00x; an f32 A cast 1.14x at N 1024, 0.91x at 2048, 0.83x at 4096; an
# f32 B cast 1.46x at M 64, 1.21x at 256, 0.97x at 512, 0.74x at 1024; relu(B)
# 1.77x at M 64, 0.99x at 512.
PROLOGUE_MAX_N = {2: 2048, 4: 1024}
PROLOGUE_MAX_M = 256
# Contractions whose epilogue stores a chain value that the graph returns
# beside the chain's end (a pre-activation a backward pass needs): the GEMM's
# epilogue, and the implicit GEMM's, store it from registers as a second
# output (gemm.Epilogue; conv_views.step), where a kernel of its own would
# read it back.
SECOND_OUTPUT = ("matmul", "conv_fprop", "conv_dgrad", "conv_wgrad")
VIEW = "view"  # the anchor of a reshape left in the graph function
FP8 = ("f8E4M3FN", "f8E5M2")  # the operand types of a matmul an amax joins
# A column kernel joins a row kernel over its rows (a row-and-column program:
# dnnc/codegen/gpu/reduce/rowcolumns.py) when a block's f32 sums of one row's
# columns, one per column reduction, take at most this much shared memory:
# three blocks of the largest fit an H100 SM, two an A100's.
COLUMN_SUMS_BYTES = 64 * 1024


@dataclass(eq=False)
class Group:
    """The ops of one kernel-to-be."""

    anchor: str  # the dnn.anchor of the kernel: an op name, "pointwise", "tensor" (or VIEW)
    ops: list = field(default_factory=list)
    tip: object = None  # the value an epilogue may extend; None when closed
    # A row reduction's (operand shape, result shape): the whole rows and the
    # value per row that its pointwise ops span.
    rows: tuple = None
    columns: tuple = None  # a column reduction's (operand shape, result shape)
    # Why ops that could have joined the kernel did not (``dnn.fusion_note``,
    # which dnn-configure adds to the kernel's reason): the plan says so.
    note: str = None
    # A filter gradient's kernel: the bias gradient (a sum of its dy) joined
    # to it (conv_bias_grad.py).
    bias: object = None

    def spans(self, value):
        """True when ``value`` is over this row reduction's rows, whole or reduced."""
        return _shape(value) in self.rows


def _kind(op):
    return op.name[4:]


def _producer(value):
    """The operation defining ``value``; None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _users(value):
    """The distinct operations using ``value``, in use order."""
    return list(dict.fromkeys(u.owner.operation for u in value.uses))


def _is_constant(op):
    return op is not None and op.name == "dnn.constant"


def _shape(value):
    return tuple(ir.ShapedType(value.type).shape)


def _per_channel(value, shape):
    """True for an operand a convolution prologue reads per channel of x
    (``shape``: [N, C, *spatial]): a tensor that varies along C alone, or a
    constant of one element."""
    dims = _shape(value)
    if len(dims) > len(shape):
        return False
    aligned = (1,) * (len(shape) - len(dims)) + dims
    if _is_constant(_producer(value)):
        return all(d == 1 for d in aligned)
    return all(d == 1 for i, d in enumerate(aligned) if i != 1) and aligned[1] in (1, shape[1])


def _row_reduction(op):
    """True for a reduction of trailing axes that keeps them (the innermost
    alone, or it and the ones before it, never the first): rows of a rank 2
    or more tensor."""
    if op.name != "dnn.reduction":
        return False
    if "keepdims" in op.attributes and not ir.BoolAttr(op.attributes["keepdims"]).value:
        return False
    return trailing_axes(ir.DenseI64ArrayAttr(op.attributes["axes"]),
                         len(_shape(op.operands[0]))) > 0


def _amax_of_all(op):
    """True for a reduction in mode amax over every axis of its operand (a
    tensor's largest |value|: an fp8 scaling's record)."""
    if op.name != "dnn.reduction" or ir.StringAttr(op.attributes["mode"]).value != "amax":
        return False
    axes = set(ir.DenseI64ArrayAttr(op.attributes["axes"]))
    return axes == set(range(len(_shape(op.operands[0]))))


def _rows(op):
    """The rows of row reduction ``op``: (operand shape, result shape)."""
    return _shape(op.operands[0]), _shape(op.results[0])


def _column_reduction(op):
    """(operand shape, result shape) of a reduction over one run of dims that
    keeps them, the innermost not among them (leading dims, or middle ones:
    a column program per outer index); None for any other op."""
    if op.name != "dnn.reduction":
        return None
    if "keepdims" in op.attributes and not ir.BoolAttr(op.attributes["keepdims"]).value:
        return None
    shape = _shape(op.operands[0])
    k = len(shape) - 1
    axes = sorted(ir.DenseI64ArrayAttr(op.attributes["axes"]))
    if not axes or axes != list(range(axes[0], axes[-1] + 1)) or axes[-1] >= k:
        return None
    return shape, tuple(1 if d in axes else n for d, n in enumerate(shape))


def _sums_pixels(op, dy):
    """True for a sum of ``dy`` over its last dim and not its channels (dim
    1): a bias gradient, or the first half of one split by
    dnn-split-reductions."""
    if op.name != "dnn.reduction" or ir.StringAttr(op.attributes["mode"]).value != "sum" \
            or op.operands[0] != dy:
        return False
    axes = set(ir.DenseI64ArrayAttr(op.attributes["axes"]))
    return 1 not in axes and len(_shape(dy)) - 1 in axes


def _is_view(op):
    """True for a reshape of a computed value or argument that is no graph
    result, or of the end of a contraction's epilogue chain that is one (a
    reshape dnn-sink-reshapes moved below the epilogue): a view of its
    operand's buffer, left in the graph function (for a graph result,
    dnn-layout-views folds the copy that bufferization leaves from the view
    into the output: the GEMM's kernel writes the output)."""
    if op.name != "dnn.reshape" or _is_constant(_producer(op.operands[0])):
        return False
    return all(u.name.startswith("dnn.") for u in _users(op.results[0])) \
        or sink.epilogue_value(op.operands[0])


def _broadcasts(shape, full):
    """True when a tensor of ``shape`` broadcasts to ``full`` (dims aligned on the right)."""
    return len(shape) <= len(full) and all(
        d in (1, f) for d, f in zip(reversed(shape), reversed(full)))


def _pointwise_over(op, shapes, full):
    """True for a pointwise op (no constant) whose result has one of ``shapes``
    and whose operands broadcast to ``full``."""
    return (op is not None and _kind(op) in POINTWISE and not _is_constant(op)
            and all(_shape(r) in shapes for r in op.results)
            and all(_broadcasts(_shape(v), full) for v in op.operands))


def _spans(op, rows):
    """True for a pointwise op over ``rows`` (``_rows``): its result is a whole
    row or one value per row, and its operands broadcast to the rows."""
    return _pointwise_over(op, rows, rows[0])


def _recomputed(ops, epilogue=True):
    """{column reduction: the pointwise ops over its operand's shape that compute
    that operand, in program order} and the set of those ops whose every user
    is such an op or reduction (nothing else needs them). With ``epilogue``,
    not an op that ends a contraction's epilogue chain
    (dnn_sink_reshapes.epilogue_value: a gelu backward on a GEMM's dx): the
    GEMM computes it and stores it, and a column kernel recomputing it would
    make the GEMM store its raw output too."""
    position = {op: i for i, op in enumerate(ops)}
    cones = {}
    for op in ops:
        columns = _column_reduction(op)
        if columns is None:
            continue
        cone, todo = set(), [op.operands[0]]
        while todo:
            p = _producer(todo.pop())
            if p not in cone and _pointwise_over(p, (columns[0],), columns[0]) \
                    and not (epilogue and sink.epilogue_value(p.results[0])):
                cone.add(p)
                todo.extend(p.operands)
        cones[op] = sorted(cone, key=position.__getitem__)
    members = set().union(*cones.values()) if cones else set()
    only = set()
    for op in reversed(ops):
        if op in members and all(u in only or op in cones.get(u, ())
                                 for u in _users(op.results[0])):
            only.add(op)
    return cones, only


class Partition:
    """Splits one block's dnn ops into Groups; see the module docstring."""

    def __init__(self, ops, epilogue=True, prologue=True, matmul_prologue=True,
                 conv_prologue=True, conv_bias_grad=True):
        self.group_of = {}
        self.producers = {}  # op -> the ops defining its operands (None: an argument)
        self.groups = []
        self.epilogue = epilogue
        self.prologue = prologue
        self.matmul_prologue = matmul_prologue
        self.conv_prologue = conv_prologue
        self.conv_bias_grad = conv_bias_grad
        self.prologue_adds = self._prologue_adds(ops) if prologue else set()
        self.cones, self.column_only = _recomputed(ops, epilogue)
        self._holders = None  # computed once placing is done
        for op in ops:
            if op not in self.column_only:  # placed with its column reductions
                self._place(op)
        self._join_columns_to_rows()
        self._bias_notes(ops)
        self._reshape_notes()

    # -- dependencies between groups ----------------------------------------

    def _source(self, value):
        """The group producing ``value``; None for arguments and constants."""
        op = _producer(value)
        return None if op is None or _is_constant(op) else self.group_of.get(op)

    def _deps(self, groups, extra=()):
        """The groups outside ``groups`` that the ops of ``groups`` and ``extra`` read."""
        out = {}
        ops = [o for g in groups for o in g.ops] + list(extra)
        inside = set(ops)  # a recomputed op is inside, whichever group owns it
        for op in ops:
            if op not in self.producers:  # cached: the bindings' calls are slow
                self.producers[op] = [_producer(v) for v in op.operands]
            for p in self.producers[op]:
                if p in inside:
                    continue
                g = self.group_of.get(p) if not _is_constant(p) else None
                if g is not None and g not in groups:
                    out[g] = None
        return list(out)

    def _reaches(self, starts, targets):
        """True when one of the groups ``starts`` depends, through any chain
        of groups, on one of ``targets``. One search from all of them, each
        group's dependencies read once: the groups do not change during it.
        (A search per start, reading dependencies again at every visit, made
        dnn-fuse quadratic: 8 of its 13 s on ResNet-50's backward graph.)"""
        targets = set(targets)
        seen, todo = set(starts), list(starts)
        while todo:
            for d in self._deps([todo.pop()]):
                if d in targets:
                    return True
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return False

    def holders(self):
        """{op: the op sets of the groups that compute it} (several for an op
        that column kernels recompute)."""
        if self._holders is None:
            self._holders = {}
            for group in self.groups:
                members = frozenset(group.ops)
                for op in group.ops:
                    self._holders.setdefault(op, []).append(members)
        return self._holders

    def _legal(self, members, op):
        """Can ``op`` and the groups ``members`` form one kernel without a cycle?"""
        return not self._reaches(self._deps(members, [op]), members)

    # -- placing ops ---------------------------------------------------------

    def _prologue_adds(self, ops):
        adds = set()
        for op in ops:
            if _kind(op) not in PROLOGUE_NORMS:
                continue
            x = op.operands[0]
            add = _producer(x)
            if add is None or add.name != "dnn.add":
                continue
            if all((u.owner.operation == op and u.operand_number == 0)
                   or u.owner.operation.name == "func.return" for u in x.uses):
                adds.add(add)
        return adds

    def _add(self, group, op):
        group.ops.append(op)
        self.group_of[op] = group

    def _new(self, anchor, op):
        group = Group(anchor)
        self.groups.append(group)
        self._add(group, op)
        return group

    def _place(self, op):
        kind = _kind(op)
        if kind == "constant":
            # Cloned into its users' kernels; a kernel of its own only when returned.
            if any(not u.name.startswith("dnn.") for u in _users(op.results[0])):
                self._new("pointwise", op)
        elif kind in POINTWISE:
            if not self._join_epilogue(op) and op not in self.prologue_adds \
                    and not self._join_reductions(op):
                self._join_pointwise(op)
        elif kind in TENSOR:
            group = self._new(VIEW if _is_view(op) else "tensor", op)
            if kind == "transpose" and self.epilogue:
                group.tip = op.results[0]
        elif kind == "reduction" and (self._join_bias_grad(op) or self._join_amax(op)
                                      or self._place_reduction(op)):
            pass
        elif kind == "concat" and self._join_concat(op):
            pass
        else:
            group = Group(kind)
            self.groups.append(group)
            x = op.operands[0] if kind in PROLOGUE_NORMS else None
            if x is not None and _producer(x) in self.prologue_adds \
                    and _producer(x) not in self.group_of:
                self._add(group, _producer(x))
            if kind == "matmul" and self.matmul_prologue:
                for index in (0, 1):
                    for p in self._operand_prologue(op, index):
                        self._move(p, group)
            if kind == "conv_fprop" and self.conv_prologue:
                chain, group.note = self._conv_prologue(op)
                for p in chain:
                    self._move(p, group)
            self._add(group, op)
            if kind == "conv_wgrad":
                self._take_bias_grad(group, op)
            if kind in EPILOGUE_ANCHORS or _row_reduction(op):
                group.tip = op.results[0]
            if _row_reduction(op):
                group.rows = _rows(op)
                self._absorb(group)

    # -- a filter gradient's bias gradient -----------------------------------

    def _join_bias_grad(self, op):
        """Join reduction ``op`` to the kernel of the filter gradient it is the
        bias gradient of (conv_bias_grad.joins), when that is placed already;
        one placed later takes it then (_take_bias_grad). True when joined."""
        if not self.conv_bias_grad:
            return False
        wgrad, _ = conv_bias_grad.joins(op)
        group = self.group_of.get(wgrad) if wgrad is not None else None
        if group is None or group.bias is not None or not self._legal([group], op):
            return False
        self._add(group, op)
        group.bias = op
        return True

    def _take_bias_grad(self, group, wgrad):
        """Filter gradient ``wgrad``'s kernel ``group`` takes a bias gradient
        of its dy placed before it (a reduction kernel of that op alone)."""
        if not self.conv_bias_grad:
            return
        for other in list(self.groups):
            if other is group or len(other.ops) != 1 or other.anchor != "reduction":
                continue
            op = other.ops[0]
            joined = conv_bias_grad.joins(op)[0]   # None: not a bias gradient
            # (the bindings' Operation == None raises rather than say False)
            if joined is not None and joined == wgrad and self._legal([group, other], op):
                self.groups.remove(other)
                self._add(group, op)
                group.bias = op
                return

    def _bias_notes(self, ops):
        """A filter gradient's kernel whose dy has a bias gradient (or the
        first half of one dnn-split-reductions split: a sum over its
        pixels) in another kernel says why (``dnn.fusion_note``)."""
        for group in self.groups:
            wgrad = next((o for o in group.ops if o.name == "dnn.conv_wgrad"), None)
            if wgrad is None or group.bias is not None or group.note:
                continue
            dy = wgrad.operands[0]
            if not any(_sums_pixels(u, dy) for u in _users(dy)):
                continue
            problem = conv_bias_grad.fusion_problem(wgrad) if self.conv_bias_grad else None
            if not self.conv_bias_grad:
                why = "tc-sm80 computes none beside a filter gradient"
            elif problem:
                why = f"tc-sm90 sums none beside this one: {problem}"
            else:
                why = "joining them would make two kernels depend on each other"
            group.note = f"the bias gradient (sum of dy) left to kernels of its own ({why})"

    def _reshape_notes(self):
        """A contraction's kernel whose chain tip is reshaped for a pointwise
        op that dnn-sink-reshapes could not move below the reshape says why
        (``dnn.fusion_note``)."""
        for group in self.groups:
            if group.tip is None or not any(o.name in sink.CONTRACTIONS for o in group.ops):
                continue
            for view in _users(group.tip):
                op = sink.candidate(view) if view.name == "dnn.reshape" else None
                why = sink.why_not(view, op) if op is not None else None
                if why:
                    note = (f"the {_kind(op)} after the reshape of its output "
                            f"{list(_shape(view.operands[0]))} to "
                            f"{list(_shape(view.results[0]))} left to a kernel of its own "
                            f"(the epilogue cannot read its operand across the reshape: "
                            f"{why})")
                    group.note = f"{group.note}; {note}" if group.note else note

    def _join_concat(self, op):
        """Join ``op``, a concat, to the concat kernel making one of its
        operands along the same axis, when that is the operand's only use:
        a chain of concats (Graph.concat of three tensors or more) is one
        kernel, which copies every input straight into its slab of the last
        result (dnnc/codegen/linalg/tensor.py)."""
        axis = ir.IntegerAttr(op.attributes["axis"]).value
        for v in op.operands:
            p = _producer(v)
            group = self.group_of.get(p) if p is not None else None
            if (group is not None and group.anchor == "concat" and p.name == "dnn.concat"
                    and ir.IntegerAttr(p.attributes["axis"]).value == axis
                    and _users(v) == [op] and self._legal([group], op)):
                self._add(group, op)
                return True
        return False

    def _operand_prologue(self, op, index):
        """The pointwise ops computing operand ``index`` of matmul ``op`` that
        join its kernel (see the module docstring), in program order."""
        chain, value = [], op.operands[index]
        shape = _shape(value)
        out = _shape(op.results[0])
        while True:
            p = _producer(value)
            if p is None or _is_constant(p) or _kind(p) not in OPERAND_PROLOGUE \
                    or len(list(value.uses)) != 1 or _shape(value) != shape \
                    or getattr(self.group_of.get(p), "anchor", None) != "pointwise":
                break
            inputs = [v for v in p.operands if not _is_constant(_producer(v))]
            if len(inputs) != 1 or _shape(inputs[0]) != shape:
                break
            chain.append(p)
            value = inputs[0]
        if not chain:
            return []
        stored = ir.ShapedType(value.type).element_type
        width = 4 if str(stored) == "f32" else 2
        if index == 0 and out[-1] > PROLOGUE_MAX_N.get(width, 0):
            return []
        if index == 1 and (len(out) < 2 or out[-2] > PROLOGUE_MAX_M):
            return []
        return chain[::-1]

    def _conv_prologue(self, op):
        """The pointwise ops computing forward convolution ``op``'s x that
        join its kernel (see the module docstring), in program order, and
        why such a chain does not join (None where it does or there is
        none)."""
        chain, value = [], op.operands[0]
        shape = _shape(value)
        blocked = None  # why the op before the chain does not join it
        while True:
            p = _producer(value)
            if p is None or _is_constant(p) or _kind(p) not in OPERAND_PROLOGUE \
                    or len(list(value.uses)) != 1 \
                    or getattr(self.group_of.get(p), "anchor", None) != "pointwise":
                break
            inputs = [v for v in p.operands if not _per_channel(v, shape)]
            if len(inputs) != 1 or _shape(inputs[0]) != shape:
                other = next((_shape(v) for v in inputs if _shape(v) != shape), None)
                if other is not None:
                    blocked = (f"x's {_kind(p)} left to a kernel of its own (the "
                               "convolution's prologue reads per-channel operands "
                               f"[1, C, 1, ...] and scalars beside x, got {list(other)})")
                break
            chain.append(p)
            value = inputs[0]
        if not chain:
            return [], blocked
        w = op.operands[1]
        attrs = {name: list(ir.DenseI64ArrayAttr(op.attributes[name]))
                 for name in ("stride", "dilation", "pre_padding", "post_padding")}
        stored = str(ir.ShapedType(value.type).element_type)
        problem = fusion_problem(stored, str(ir.ShapedType(w.type).element_type), shape,
                                 _shape(w), **attrs)
        if problem:
            names = ", ".join(_kind(p) for p in chain[::-1])
            return [], (f"x's {names} left to a kernel of their own (tc-sm90 runs no prologue "
                        f"on x here: {problem})")
        return chain[::-1], blocked

    def _move(self, op, group):
        """Move ``op`` from its pointwise kernel into ``group``; a kernel left
        empty goes."""
        old = self.group_of[op]
        old.ops.remove(op)
        if not old.ops:
            self.groups.remove(old)
        self._add(group, op)

    def _join_epilogue(self, op):
        if not self.epilogue:
            return False
        for v in op.operands:
            group = self._source(v)
            if (group is not None and group.tip is not None and group.tip == v
                    and self._only_user(group, v, op) and self._legal([group], op)
                    and (group.rows is None or group.spans(op.results[0]))
                    and (group.anchor != "tensor" or self._unary(op, v))):
                self._add(group, op)
                group.tip = op.results[0]
                if group.rows is not None:
                    self._absorb(group)
                return True
        return False

    def _join_amax(self, op):
        """Join ``op``, an amax over every axis (``_amax_of_all``) of an fp8
        matmul kernel's chain tip, to that kernel, the tip unchanged."""
        if not self.epilogue or not _amax_of_all(op):
            return False
        group = self._source(op.operands[0])
        if group is None or group.anchor != "matmul" or group.tip != op.operands[0] \
                or not self._legal([group], op):
            return False
        matmul = next(o for o in group.ops if o.name == "dnn.matmul")
        if any(str(ir.ShapedType(v.type).element_type) not in FP8 for v in matmul.operands):
            return False
        self._add(group, op)
        return True

    @staticmethod
    def _unary(op, value):
        """``op`` reads no tensor but ``value`` (its other operands are
        constants) and keeps its shape: what a transpose's kernel applies to
        each element it moves."""
        others = [v for v in op.operands if v != value]
        return all(_is_constant(_producer(v)) for v in others) \
            and _shape(op.results[0]) == _shape(value)

    @staticmethod
    def _only_user(group, value, op):
        """``op`` is the one dnn user of the chain tip ``value``. A matmul's
        or convolution's tip may also be returned (a second output, such as
        the pre-activation a backward pass needs: SECOND_OUTPUT): the
        GEMM's epilogue stores it beside the result."""
        users = _users(value)
        if group.anchor in SECOND_OUTPUT:
            # (An amax of the tip may join the kernel beside the chain:
            # _join_amax; where it does not, the kernel returns the tip too.)
            # Nor a view of it that is only returned (dnn-sink-reshapes
            # leaves one where the graph returns the viewed pre-activation).
            users = [u for u in users if u.name != "func.return" and not _amax_of_all(u)
                     and not sink.returned_view(u)]
        return users == [op]

    def _absorb(self, group):
        """Merge into row-reduction ``group`` each pointwise kernel over its
        rows whose results only ``group`` uses (and, in turn, the ones that
        fed those)."""
        todo = self._deps([group])
        while todo:
            g = todo.pop()
            if g.anchor != "pointwise" or any(_shape(r) != group.rows[0]
                                              for o in g.ops for r in o.results):
                continue
            inside = set(g.ops) | set(group.ops)
            if any(u.owner.operation not in inside
                   for o in g.ops for r in o.results for u in r.uses):
                continue
            if self._reaches(self._deps([group, g]), [group, g]):
                continue
            for o in g.ops:
                self._add(group, o)
            self.groups.remove(g)
            todo = self._deps([group])

    # -- row and column programs ---------------------------------------------

    def _place_reduction(self, op):
        """Place a column reduction, or a row reduction that joins a kernel
        (see the module docstring); False when a row reduction starts one."""
        columns = _column_reduction(op)
        if columns is not None:
            self._place_columns(op, columns)
            return True
        if not _row_reduction(op):
            return False
        x, rows = op.operands[0], _rows(op)
        source = self._source(x)
        if source is not None and source.rows == rows and self._legal([source], op):
            self._add(source, op)
            return True
        if source is not None and self._over_rows(source, rows) \
                and self._legal([source], op):
            source.anchor, source.rows, source.tip = "reduction", rows, op.results[0]
            self._add(source, op)
            self._absorb(source)
            return True
        for g in reversed(self.groups):  # a row kernel that reads x too
            if g.rows == rows and any(x in list(o.operands) for o in g.ops) \
                    and self._legal([g], op):
                self._add(g, op)
                return True
        return False

    def _over_rows(self, group, rows):
        """True for a pointwise kernel whose every op is over ``rows``."""
        return group.anchor == "pointwise" and all(_spans(o, rows) for o in group.ops)

    def _place_columns(self, op, columns):
        """A column reduction with the ops it recomputes joins the latest kernel
        over the same columns, else starts one."""
        ops = self.cones[op] + [op]
        target = None
        for g in reversed(self.groups):
            # Not a kernel whose sums it reads over the rows (a variance's
            # mean): a column program makes its sums in one pass.
            made = set(g.ops) - set(ops)
            reads = any(_producer(v) in made and not _is_constant(_producer(v))
                        for o in ops for v in o.operands)
            if g.columns == columns and not reads and \
                    not self._reaches(self._deps([g], ops), [g]):
                target = g
                break
        if target is None:
            target = Group("reduction", columns=columns)
            self.groups.append(target)
        for o in ops:
            if o not in target.ops:
                target.ops.append(o)
                self.group_of.setdefault(o, target)

    def _join_columns_to_rows(self):
        """Merge each column kernel into a row kernel over the rows it sums
        that reads everything it reads (see the module docstring), when its
        sums of a row fit COLUMN_SUMS_BYTES."""
        for col in [g for g in self.groups if g.columns is not None]:
            shape, count = col.columns[0], sum(1 for o in col.ops if _column_reduction(o))
            if col.columns[1][0] != 1:
                continue  # a middle reduction: row-and-column programs sum leading dims
            rows = 1
            for d in shape[:-1]:
                rows *= d
            if rows < 2 or shape[-1] < 2 or shape[-1] * count * 4 > COLUMN_SUMS_BYTES:
                continue
            inside = set(col.ops)
            reads = {v for o in col.ops for v in o.operands
                     if _producer(v) not in inside and not _is_constant(_producer(v))}
            for g in reversed(self.groups):
                if g.rows != (shape, shape[:-1] + (1,)):
                    continue
                known = {v for o in g.ops for v in list(o.operands) + list(o.results)}
                if reads <= known and not self._reaches(self._deps([g, col]), [g, col]):
                    for o in col.ops:
                        if o not in g.ops:
                            g.ops.append(o)
                        if self.group_of.get(o) is col:
                            self.group_of[o] = g
                    self.groups.remove(col)
                    self._holders = None
                    break

    def _join_reductions(self, op):
        """Join a pointwise op to a column kernel it reads (over the reduced
        shape), else to the row kernels it reads (over their rows) or, reading
        none, to the latest row kernel that reads one of its operands; True
        when joined."""
        sources = [g for g in dict.fromkeys(self._source(v) for v in op.operands)
                   if g is not None]
        for g in sources:
            if g.columns is not None and _pointwise_over(op, (g.columns[1],), g.columns[1]) \
                    and self._legal([g], op):
                self._add(g, op)
                return True
        row_groups = [g for g in sources if g.rows is not None]
        if not row_groups:
            reads = {v for v in op.operands if not _is_constant(_producer(v))}
            row_groups = [g for g in reversed(self.groups) if g.rows is not None
                          and _spans(op, g.rows)
                          and any(v in reads for o in g.ops for v in o.operands)][:1]
        rows = next((g.rows for g in row_groups if _spans(op, g.rows)), None)
        if rows is None:
            return False
        members = []
        for g in row_groups + [g for g in sources if g.anchor == "pointwise"]:
            if g not in members and (g.rows == rows or self._over_rows(g, rows)) \
                    and self._legal(members + [g], op):
                members.append(g)
        into = next((g for g in members if g.rows == rows), None)
        if into is None:
            return False
        for g in members:
            if g is not into:
                for o in g.ops:
                    self._add(into, o)
                self.groups.remove(g)
        self._add(into, op)
        return True

    def _join_pointwise(self, op):
        candidates = []
        for v in op.operands:
            g = self._source(v)
            if g is not None and g.anchor == "pointwise" and g not in candidates:
                candidates.append(g)
        members = []
        for g in candidates:
            if self._legal(members + [g], op):
                members.append(g)
        if not members:
            self._new("pointwise", op)
            return
        into = members[0]
        for g in members[1:]:
            for o in g.ops:
                self._add(into, o)
            self.groups.remove(g)
        self._add(into, op)


# ----------------------------------------------------------------------------
# Outlining


def _topological(groups, partition, position):
    """Groups in dependency order, earliest first op first among the ready ones."""
    deps = {g: set(partition._deps([g])) for g in groups}
    users = {g: [] for g in groups}
    for g, ds in deps.items():
        for d in ds:
            users[d].append(g)
    key = {g: min(position[o] for o in g.ops) for g in groups}
    ready = [(key[g], i, g) for i, g in enumerate(groups) if not deps[g]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, g = heapq.heappop(ready)
        order.append(g)
        for u in users[g]:
            deps[u].discard(g)
            if not deps[u]:
                heapq.heappush(ready, (key[u], groups.index(u), u))
    assert len(order) == len(groups), "kernel groups form a cycle"
    return order


def _clone(op, mapping):
    """Re-create ``op`` at the current insertion point with operands mapped."""
    attrs = dict(op.attributes.items())
    new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                              operands=[mapping[v] for v in op.operands], attributes=attrs,
                              loc=op.location)
    for old, res in zip(op.results, new.results):
        mapping[old] = res
    return new


def _build_kernel(name, group, position, fn, partition):
    """Create the kernel function before ``fn``; return it and its (inputs, outputs).
    An op the kernel only recomputes (``partition`` places it in another group)
    is no result of it, nor is an op for users whose groups all compute it."""
    ops = sorted(group.ops, key=position.__getitem__)
    inside = set(ops)
    holders = partition.holders()

    def read_here(user, op):
        if partition.group_of.get(op) is not group:
            return False
        if user in inside:
            # A user this kernel computes that another kernel recomputes too
            # (a column reduction's cone) reads op's result there as an input.
            return any(op not in members for members in holders.get(user, ()))
        return not (user in holders and all(op in members for members in holders[user]))

    inputs, outputs = {}, []
    for op in ops:
        for v in op.operands:
            p = _producer(v)
            if p not in inside and not _is_constant(p):
                inputs[v] = None
        for r in op.results:
            if any(read_here(u.owner.operation, op) for u in r.uses):
                outputs.append(r)
    inputs = list(inputs)
    with ops[0].location:
        kernel = func.FuncOp(name, ([v.type for v in inputs], [r.type for r in outputs]),
                             visibility="private", ip=ir.InsertionPoint(fn))
        kernel.attributes["dnn.kernel"] = ir.UnitAttr.get()
        kernel.attributes["dnn.anchor"] = ir.StringAttr.get(group.anchor)
        if group.note:
            kernel.attributes["dnn.fusion_note"] = ir.StringAttr.get(group.note)
        block = kernel.add_entry_block()
        mapping = dict(zip(inputs, block.arguments))
        with ir.InsertionPoint(block):
            for op in ops:
                for v in op.operands:
                    if v not in mapping:  # a constant of the graph: cloned, not passed
                        _clone(_producer(v), mapping)
                _clone(op, mapping)
            func.ReturnOp([mapping[r] for r in outputs])
    return kernel, inputs, outputs


def graph_functions(module):
    """The functions marked dnn.graph, else the public functions that are not kernels."""
    funcs = [op.operation for op in module.regions[0].blocks[0].operations
             if op.operation.name == "func.func"]
    marked = [f for f in funcs if "dnn.graph" in f.attributes]
    if marked:
        return marked
    return [f for f in funcs if "dnn.kernel" not in f.attributes
            and ("sym_visibility" not in f.attributes
                 or ir.StringAttr(f.attributes["sym_visibility"]).value == "public")]


def fuse_function(fn, epilogue=True, prologue=True, matmul_prologue=True, conv_prologue=True,
                  conv_bias_grad=True):
    """Outline the dnn ops of one function into kernels; return how many."""
    block = fn.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    dnn = [op for op in ops if op.name.startswith("dnn.")]
    if not dnn:
        return 0
    graph = ir.StringAttr(fn.attributes["sym_name"]).value
    others = [op.name for op in ops if not op.name.startswith("dnn.")
              and op.name != "func.return"]
    if others:
        raise UnsupportedError(f"dnn-fuse: function @{graph}: expected dnn ops and "
                               f"func.return only, got '{others[0]}'")
    position = {op: i for i, op in enumerate(dnn)}
    partition = Partition(dnn, epilogue, prologue, matmul_prologue, conv_prologue,
                          conv_bias_grad)
    terminator = ops[-1]
    replaced, count = {}, 0
    for group in _topological(partition.groups, partition, position):
        if group.anchor == VIEW:  # a reshape: stays in the graph function
            with ir.InsertionPoint(terminator):
                for op in group.ops:
                    mapping = {v: replaced.get(v, v) for v in op.operands}
                    new = _clone(op, mapping)
                    replaced.update(zip(op.results, new.results))
            continue
        name = f"{graph}_k{count}_{group.anchor}"
        kernel, inputs, outputs = _build_kernel(name, group, position, fn, partition)
        if not outputs:  # dead ops (dnn ops are pure): no kernel
            kernel.operation.erase()
            continue
        with group.ops[0].location:
            call = func.CallOp(kernel, [replaced.get(v, v) for v in inputs],
                               ip=ir.InsertionPoint(terminator))
        for old, new in zip(outputs, call.results):
            replaced[old] = new
        count += 1
    for old, new in replaced.items():
        old.replace_all_uses_with(new)
    for op in reversed(dnn):
        op.erase()
    return count


@register
@dataclass
class DnnFuse(DnncPass):
    NAME = "dnn-fuse"
    epilogue: bool = True
    prologue: bool = True
    matmul_prologue: bool = True
    conv_prologue: bool = True
    conv_bias_grad: bool = True

    def run(self, module):
        for fn in graph_functions(module):
            fuse_function(fn, self.epilogue, self.prologue, self.matmul_prologue,
                          self.conv_prologue, self.conv_bias_grad)

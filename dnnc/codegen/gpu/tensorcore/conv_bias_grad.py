"""A convolution's bias gradient beside its filter gradient: what joins,
and how the fused kernel's linalg form reads.

The bias gradient of a convolution is ``db[k] = sum over N·(D)·P·Q of
dy[n, k, (d,) p, q]``: a sum of dy over every dim but its channels. A
filter gradient ``dw = conv_wgrad(dy, x)`` reads the same dy as its
GEMM's A (M = K, the reduction over N·(D)·P·Q), so tc-sm90's kernel has
every element of dy in shared memory once for each column of output tiles;
the blocks of the first column sum it there (sm90/bias_grad.py) and db is
never a kernel of its own.

* ``bias_gradient(op)``: the dy that reduction ``op`` is the bias gradient
  of (a sum over every dim but 1), else None. dnn-split-reductions leaves
  such a sum whole where dnn-fuse joins it (``joins``), and dnn-fuse puts
  it in the filter gradient's kernel, whatever their order in the graph.
* ``fusion_problem``: why tc-sm90 would not run a filter gradient with its
  bias gradient (asked before the join, so that a fused sum never lands on
  a strategy without one: tc-sm80, simt-generic run it as the linalg form
  says, but tc-sm80 refuses such a kernel).
* ``match``: in the bufferized kernel function (after linalg), the ops of
  the sum (its accumulator's fill, the reduction generic that reads dy,
  the conversion into db's type) and db's buffer, which conv.match leaves
  out of the GEMM's epilogue.
"""

import math
from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil

# The types tc-sm90's filter gradient reads dy in shared memory as, where the
# consumers can sum it (16-bit elements, 8 to a 16-byte piece). A tf32
# gradient reads a transposed copy of dy as its B (sm90/tf32_conv.py).
ELEMENTS = ("bf16", "f16")


def _shape(value):
    return list(ir.ShapedType(value.type).shape)


def bias_gradient(op):
    """The tensor whose bias gradient reduction ``op`` is (a sum over every
    dim of a rank 3-5 tensor but dim 1, the channels), or None."""
    if op.name != "dnn.reduction" or ir.StringAttr(op.attributes["mode"]).value != "sum":
        return None
    x = op.operands[0]
    rank = len(_shape(x))
    axes = sorted(ir.DenseI64ArrayAttr(op.attributes["axes"]))
    if rank not in (3, 4, 5) or axes != [0] + list(range(2, rank)):
        return None
    return x


def wgrads_of(dy):
    """The conv_wgrad ops that read ``dy`` as their dy (operand 0)."""
    return [u.owner.operation for u in dy.uses
            if u.owner.operation.name == "dnn.conv_wgrad" and u.operand_number == 0]


def fusion_problem(wgrad):
    """Why tc-sm90 would not sum the bias gradient beside filter gradient
    ``wgrad`` (a dnn.conv_wgrad op), or None."""
    from dnnc.codegen.gpu.tensorcore.sm90.im2col import CORNER_RANGE

    dy, x = wgrad.operands[0], wgrad.operands[1]
    dw = wgrad.results[0]
    dy_type = str(ir.ShapedType(dy.type).element_type)
    x_type = str(ir.ShapedType(x.type).element_type)
    x_shape, dw_shape, dy_shape = _shape(x), _shape(dw), _shape(dy)
    attrs = {name: list(ir.DenseI64ArrayAttr(wgrad.attributes[name]))
             for name in ("stride", "dilation", "pre_padding", "post_padding")}
    rank = len(x_shape)
    channels, k = x_shape[1], dy_shape[1]
    groups = channels // dw_shape[1] if dw_shape[1] else 1
    if dy_type not in ELEMENTS or x_type != dy_type:
        return (f"dy {dy_type}, x {x_type}: the sum is taken from dy's tiles in shared "
                f"memory, {' or '.join(ELEMENTS)} (a tf32 gradient reads a copy of dy)")
    if groups != 1:
        return f"{groups} groups: the sum is taken beside a filter gradient of one group"
    if rank not in CORNER_RANGE:
        return f"a {rank - 2}-D convolution: TMA's im2col mode takes 1-D to 3-D"
    if k % 8 or channels % 8:
        return (f"K = {k}, C = {channels}: tc-sm90 reads dy and x by TMA in 16-byte pixels "
                "(both multiples of 8)")
    if any(not 1 <= s <= 8 for s in attrs["stride"]):
        return f"stride {attrs['stride']}: TMA's im2col traversal strides are 1 to 8"
    lo, hi = CORNER_RANGE[rank]
    upper = [q - (r - 1) * d for q, r, d in zip(attrs["post_padding"], dw_shape[2:],
                                               attrs["dilation"])]
    if any(not lo <= -p <= hi for p in attrs["pre_padding"]) or \
            any(not lo <= u <= hi for u in upper):
        return "the im2col pixel box (from the padding and the dilated filter) is past TMA's"
    if math.prod(dy_shape) == 0:
        return "an empty dy"
    return None


def joins(op):
    """(the conv_wgrad whose kernel reduction ``op`` joins, None) when it is
    a bias gradient tc-sm90 sums beside that filter gradient; (None, the
    first such wgrad's fusion_problem) when it is a bias gradient that
    cannot join; (None, None) otherwise."""
    dy = bias_gradient(op)
    if dy is None:
        return None, None
    wgrads = wgrads_of(dy)
    problems = [fusion_problem(w) for w in wgrads]
    for wgrad, problem in zip(wgrads, problems):
        if problem is None:
            return wgrad, None
    return None, problems[0] if problems else None


@dataclass
class BiasGrad:
    """The bias gradient in a bufferized filter-gradient kernel: ``ops``
    (the fill of its f32 accumulator, the reduction generic reading dy, a
    generic converting the sum into db's type), ``out`` db's buffer (a
    kernel argument, or a view of one), ``element`` db's element type."""

    ops: list
    out: object
    element: object


def match(ops, dy):
    """The ``BiasGrad`` among kernel body ``ops`` (bufferized linalg) that
    sums ``dy`` (the kernel argument the convolution reads as dy), or None.
    Raises ValueError when a reduction of dy alone is there but is no bias
    gradient the kernel can take."""
    generics = [o for o in ops if o.name == "linalg.generic"]
    op = None
    for candidate in generics:
        iterators = [str(a) for a in ir.ArrayAttr(candidate.attributes["iterator_types"])]
        inputs = list(candidate.operands)[:len(candidate.opview.inputs)]
        if "#linalg.iterator_type<reduction>" in iterators and len(inputs) == 1 \
                and _root(inputs[0]) == dy:
            op = candidate
            break
    if op is None:
        return None
    acc = op.operands[1]
    names = [o.name for o in irutil.body_ops(op)]
    if any(n not in ("arith.extf", "arith.addf", "linalg.yield") for n in names) or \
            names.count("arith.addf") != 1:
        raise ValueError("a reduction of dy that is no sum of its elements")
    channels = _shape(dy)[1]
    if math.prod(_shape(acc)) != channels:
        raise ValueError(f"a sum of dy into {_shape(acc)}: expected its {channels} channels")
    owned = [op]
    out = acc
    for other in ops:
        if other == op:
            continue
        operands = list(other.operands)
        if other.name == "linalg.generic":
            inputs = operands[:len(other.opview.inputs)]
            body = [o.name for o in irutil.body_ops(other)]
            if not inputs and _root(operands[-1]) == _root(acc) and body == ["linalg.yield"]:
                owned.append(other)          # the accumulator's zero fill
            elif len(inputs) == 1 and _root(inputs[0]) == _root(out):
                if any(n not in ("arith.truncf", "arith.extf", "linalg.yield") for n in body):
                    raise ValueError(f"'{body[0]}' applied to the bias gradient's sum")
                owned.append(other)          # its conversion into db's type
                out = operands[1]
        elif other.name in ("linalg.fill",) and _root(operands[-1]) == _root(acc):
            owned.append(other)
        elif other.name in ("linalg.copy", "memref.copy") and _root(operands[0]) == _root(out):
            owned.append(other)              # the sum copied into the output
            out = operands[1]
    if not irutil.is_block_argument(_root(out)):
        raise ValueError("the bias gradient is not a kernel output")
    return BiasGrad([o for o in ops if o in owned], out, ir.MemRefType(out.type).element_type)


def _root(value):
    """The buffer a chain of views starts from."""
    from dnnc.codegen.gpu.tensorcore.conv_views import root

    return root(value)

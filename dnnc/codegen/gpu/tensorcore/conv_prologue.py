"""A forward convolution's x prologue: per-channel pointwise ops on the
activation before the implicit GEMM multiplies it (cuDNN's BN-ReLU-conv:
relu(x * scale + shift) with scale and shift ``[1, C, 1, 1]``).

dnn-fuse joins such a chain to the convolution's kernel where tc-sm90 runs
it (``fusion_problem``). In the kernel's linalg form the chain is one
elementwise generic (after linalg's elementwise fusion) that reads x and
the per-channel tensors and writes a buffer of x's shape, which the
convolution pads with zeros and converts to f32 (conv.py's pad generics).
``match`` reads that generic as a ``ConvPrologue``: the body ops from x's
element, and each per-channel input with its channel. Without padding
there is no padded buffer, and linalg moves a prologue that reads x alone
(a relu) into the convolution's body: ``match_body`` reads it there. tc-sm90
(sm90/prologue.py) loads x's tiles as stored and runs ``apply`` on each
element while converting the tile into the layout wgmma reads.

The padding is the subtle part: the convolution pads the prologue's result
with zeros, not x (relu(0 * s + b) is relu(b), not 0). TMA's im2col mode
zero-fills the taps that fall outside the image; after the prologue they
must be zero again, so the conversion knows for each row (an output pixel)
and K step (a filter tap) whether the tap lies in the image.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
# (gemm's cone of a contraction body's value: the matmul prologue's reading.)
from dnnc.codegen.gpu.tensorcore.gemm import NotAGemm, _cone

# The types tc-sm90 multiplies that a prologue's x may be stored as: the
# conversion reads 16-byte pieces of 8 elements (16-bit types only: x's
# tile stays the K step's 128 bytes a row).
ELEMENTS = ("bf16", "f16")
# A K step of 16-bit elements: a group's channels must fill whole ones.
K_STEP = 64


def fusion_problem(x_element, w_element, x_shape, w_shape, stride, dilation, pre_padding,
                   post_padding):
    """Why tc-sm90 cannot run a forward convolution of x ``x_shape``
    (``[N, C, *spatial]``, stored as ``x_element`` before the prologue) by
    a filter ``w_shape`` with a prologue on x, or None. dnn-fuse asks
    before it joins the ops, so that a chain it fuses never lands on a
    strategy without prologues (tc-sm80, simt-generic)."""
    from dnnc.codegen.gpu.tensorcore.sm90.im2col import CORNER_RANGE

    rank = len(x_shape)
    channels, cg = x_shape[1], w_shape[1]
    groups = channels // cg if cg else 1
    if x_element not in ELEMENTS or w_element != x_element:
        return (f"x stored as {x_element}, the filter {w_element}: a prologue runs on "
                f"{' or '.join(ELEMENTS)} convolutions")
    if rank not in CORNER_RANGE:
        return f"a {rank - 2}-D convolution: TMA's im2col mode takes 1-D to 3-D"
    if channels % 8:
        return (f"C = {channels}: a prologue's x is read by TMA in 16-byte pixels (C a "
                "multiple of 8)")
    if groups != 1 and cg % K_STEP:
        return (f"{groups} groups of {cg} channels: a group's channels are read in whole K "
                f"steps of {K_STEP}")
    if any(not 1 <= s <= 8 for s in stride):
        return f"stride {list(stride)}: TMA's im2col traversal strides are 1 to 8"
    lo, hi = CORNER_RANGE[rank]
    upper = [q - (r - 1) * d for q, r, d in zip(post_padding, w_shape[2:], dilation)]
    if any(not lo <= -p <= hi for p in pre_padding) or any(not lo <= u <= hi for u in upper):
        return "the im2col pixel box (from the padding and the dilated filter) is past TMA's"
    return None


@dataclass
class ChannelInput:
    """A per-channel operand of the prologue: the body's block argument, the
    buffer (a kernel argument), and which of its dims runs along x's C
    (None: one element, read at 0)."""

    argument: object
    value: object
    channel_dim: int = None


@dataclass
class ConvPrologue:
    """The elementwise generic that computes the convolution's x from the
    stored activation ``source`` (a kernel argument) and the per-channel
    ``channels``: its body ops from x's block argument ``argument`` to
    ``result``, the 16-bit element the tensor cores multiply (what the pad
    generic's extf reads)."""

    generic: object
    source: object
    argument: object
    channels: list
    ops: list
    result: object

    @property
    def element(self):
        return str(self.result.type)

    def apply(self, values, per_channel):
        """The body ops cloned at the insertion point on vectors: ``values``
        (a vector of elements of x as stored, one channel each) and
        ``per_channel`` ({ChannelInput.argument: a vector of that input's
        elements at the same channels}); returns the vector of elements to
        multiply. Values from outside the body (constants) are broadcast:
        one op a vector, not an op an element, so that LLVM can pair the
        16-bit arithmetic (HMUL2, HADD2)."""
        from mlir.dialects import vector

        width = ir.VectorType(values.type).shape[0]

        def wide(t):
            return ir.VectorType.get([width], t)

        mapping = {self.argument: values, **per_channel}
        for op in self.ops:
            if op.name == "arith.constant":     # a scalar of the body: broadcast
                new = irutil.clone_op(op, [], op.location)
                mapping[op.results[0]] = vector.broadcast(wide(op.results[0].type),
                                                          new.results[0])
                continue
            operands = [mapping[v] if v in mapping else vector.broadcast(wide(v.type), v)
                        for v in op.operands]
            attrs = {op.attributes[i].name: op.attributes[i].attr
                     for i in range(len(op.attributes))}
            new = ir.Operation.create(op.name, results=[wide(r.type) for r in op.results],
                                      operands=operands, attributes=attrs, loc=op.location)
            mapping.update(zip(op.results, new.results))
        return mapping[self.result]


def match(generic, source, arguments, element):
    """The ConvPrologue of ``generic``, the elementwise generic before the
    convolution that reads its x argument ``source``; ``arguments``: the
    kernel function's; ``element``: the type the tensor cores multiply.
    Raises NotAGemm with the reason where it is no such prologue."""
    from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs

    iterators = [irutil.is_parallel(i) for i in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if not all(iterators):
        raise NotAGemm("the prologue before the convolution is not elementwise")
    maps = irutil.indexing_maps(generic)
    count = len(generic.opview.inputs)
    inputs = list(generic.operands)[:count]
    block = generic.regions[0].blocks[0]
    rank = len(iterators)
    argument, channels = None, []
    for value, amap, arg in zip(inputs, maps, list(block.arguments)):
        exprs = broadcast_exprs(amap)
        if value == source and exprs == list(range(rank)):
            argument = arg
            continue
        # Per channel: its dims of more than one element run along C (loop
        # dim 1); those of one are read at 0, whatever the map says.
        shape = ir.MemRefType(value.type).shape
        moving = [d for d, size in enumerate(shape) if size != 1]
        if not any(value == a for a in arguments) or exprs is None \
                or any(exprs[d] != 1 for d in moving) or len(moving) > 1:
            raise NotAGemm("the prologue reads a tensor that is neither x nor per channel of x "
                           f"(map {amap})")
        channels.append(ChannelInput(arg, value, moving[0] if moving else None))
    if argument is None:
        raise NotAGemm("the prologue does not read x whole")
    body = irutil.body_ops(generic)
    last = body[-1]
    extended = irutil.defining_op(last.operands[0])
    if extended is None or extended.name != "arith.extf" \
            or str(extended.operands[0].type) != element:
        raise NotAGemm(f"the prologue does not end in the {element} the tensor cores multiply")
    result = extended.operands[0]
    ops = [o for o in body if o != extended and o != last]
    for o in ops:
        if len(o.regions) or o.name == "linalg.index":
            raise NotAGemm(f"'{o.name}' in the prologue: expected elementwise ops of the "
                           "element alone")
    return ConvPrologue(generic, source, argument, channels, ops, result)


def match_body(contraction, source, element):
    """The ConvPrologue inside ``contraction``'s body (a convolution without
    padding: linalg fused the prologue's generic into it): the ops from x's
    block argument to the ``element`` value the multiply extends. Raises
    NotAGemm where the body is no such thing."""
    body = irutil.body_ops(contraction)
    argument = list(contraction.regions[0].blocks[0].arguments)[0]
    mul = next((o for o in body if o.name == "arith.mulf"), None)
    if mul is None:
        raise NotAGemm("the convolution's body multiplies nothing")
    order = {o: i for i, o in enumerate(body)}
    for v in mul.operands:
        extended = irutil.defining_op(v)
        if extended is None or extended.name != "arith.extf":
            continue
        result = extended.operands[0]
        ops, arguments = _cone(result, order)
        if arguments == {argument} and ops and str(result.type) == element:
            for o in ops:
                if len(o.regions) or o.name == "linalg.index":
                    raise NotAGemm(f"'{o.name}' in the prologue: expected elementwise ops of "
                                   "the element alone")
            return ConvPrologue(contraction, source, argument, [], ops, result)
    raise NotAGemm(f"the convolution's body does not multiply an {element} that x's prologue "
                   "computes")


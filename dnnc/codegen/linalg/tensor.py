"""Data movement ops: reshape, transpose, slice and concat.

Element types pass through unchanged (booleans stay in their i8 storage).

* reshape: collapse to 1-D (row-major order) and expand to the new shape;
  both are views, so no copy is made.
* transpose: a linalg.generic copy whose input map permutes the dims.
* slice: a strided tensor.extract_slice view, copied with linalg.copy. Both
  give a fresh contiguous tensor (a strided view would need a strided
  memref.copy, from MLIR's runtime library, when it leaves a function).
* concat: each input is copied into its slab of a new tensor, in place; an
  input that is itself a concat along the same axis in the same kernel
  (dnn-fuse joins such a chain) has its own inputs copied into the slabs
  instead, so that each is moved once.

A result whose element type differs from the input's (the graph API can
produce that for a virtual f32 input and a typed output) is converted after
the move.
"""

from mlir import ir

from dnnc.codegen.linalg import emit
from dnnc.codegen.linalg.emit import PARALLEL, d


def _copy(value, out_shape, in_map):
    rank = len(out_shape)
    init = emit.empty(out_shape, _element(value))
    return emit.generic([value], [init], [in_map, emit.identity(rank)], [PARALLEL] * rank,
                        lambda x, _: [x])[0]


def _element(value):
    return ir.RankedTensorType(value.type).element_type


def _reshape(view):
    x = view.operands["x"]
    ix = emit.logical_info(x)
    out = emit.logical_info(view.results["y"])
    if ix.shape == out.shape:
        return {"y": x}
    if not ix.shape:  # rank 0 -> all-ones shape: one group-less expand
        return {"y": emit.expand(x, [], out.shape)}
    size = 1
    for n in ix.shape:
        size *= n
    flat = x if len(ix.shape) == 1 else emit.collapse(x, [list(range(len(ix.shape)))], [size])
    if not out.shape:
        return {"y": emit.collapse(flat, [], [])}
    if len(out.shape) == 1:
        return {"y": flat}
    return {"y": emit.expand(flat, [list(range(len(out.shape)))], out.shape)}


def _transpose(view):
    x = view.operands["x"]
    perm = list(view.attrs["permutation"])
    out = emit.logical_info(view.results["y"])
    rank = len(perm)
    # y[i_0, .., i_r] = x[j] with j[perm[k]] = i_k: x's dim perm[k] is loop k.
    inverse = [0] * rank
    for k, p in enumerate(perm):
        inverse[p] = k
    return {"y": _copy(x, out.shape, emit.amap(rank, [d(inverse[j]) for j in range(rank)]))}


def _slice(view):
    x = view.operands["x"]
    a = view.attrs
    out = emit.logical_info(view.results["y"])
    if not all(out.shape):
        return {"y": emit.empty(out.shape, _element(x))}  # no element to read
    # y[i] = x[start + i * step] along every dim: a strided view of x, copied
    # so the result is contiguous. (A generic reading x at start + i * step
    # would take its loop range from x wherever start = 0 and step = 1.)
    part = emit.extract_slice(x, a["start"], out.shape, a["step"])
    return {"y": emit.copy(part, emit.empty(out.shape, _element(x)))}


def _concat(view):
    inputs = [view.operands["a"], view.operands["b"]]
    axis = view.attrs["axis"]
    out = emit.logical_info(view.results["y"])
    rank = len(out.shape)
    result = emit.fresh(out.shape, _element(inputs[0]))
    offset = 0
    for value in inputs:
        shape = list(emit.shape_of(value))
        parts = _parts(value, axis)
        if parts is None:  # copied as a whole
            parts = [(value, 0)] if shape[axis] and all(shape) else []
        for part_value, start in parts:
            part_shape = list(emit.shape_of(part_value))
            offsets = [0] * rank
            # This input's slab starts where the previous ended.
            offsets[axis] = offset + start
            result = emit.write_into(result, offsets, part_shape, [1] * rank,
                                     lambda part, v=part_value: emit.copy(v, part))
        offset += shape[axis]
    return {"y": result}


def _parts(value, axis):
    """[(input, offset along ``axis``)] when ``value`` is a concat along
    ``axis`` lowered in this function and used once (here): the copies of
    its inputs into slabs of a fresh tensor. A concat of it then copies
    those inputs straight into its own slabs, and the inner one's copies
    and tensor go unused: a chain of concats moves each input once. None
    for anything else."""
    if sum(1 for _ in value.uses) != 1:
        return None
    parts = []
    while True:
        op = _producer(value)
        if op is not None and op.name == "bufferization.alloc_tensor":
            return parts[::-1]
        if op is None or op.name != "tensor.insert_slice":
            return None
        copy, view = _producer(op.operands[0]), op.opview
        if (copy is None or copy.name != "linalg.copy"
                or any(s != 1 for s in view.static_strides)
                or any(o for k, o in enumerate(view.static_offsets) if k != axis)):
            return None
        parts.append((copy.operands[0], view.static_offsets[axis]))
        value = op.operands[1]  # the tensor the slab went into


def _producer(value):
    """The operation defining ``value``; None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _converting(move):
    """Run a data-movement lowering, then convert to the result's element type
    when it differs from the input's."""

    def lower(view):
        (name, result), = [(k, v) for k, v in view.results.items() if v is not None]
        value = move(view)[name]
        have = emit.logical_info(value).dtype
        want = emit.logical_info(result).dtype
        if have is not want:
            value = emit.convert(value, have, want)
        return {name: value}

    lower.__name__ = f"lower_{move.__name__.strip('_')}"
    return lower


lower_reshape = _converting(_reshape)
lower_transpose = _converting(_transpose)
lower_slice = _converting(_slice)
lower_concat = _converting(_concat)

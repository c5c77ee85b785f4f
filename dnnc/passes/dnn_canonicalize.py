"""dnn-canonicalize: local simplifications of dnn ops, iterated to a fixed point.

dnn ops are pure, so an op whose results are all unused is erased. The folds:

* ``cast`` to the type it already has is removed;
* ``cast(cast(x))`` becomes one cast when the inner cast is exact (widening:
  every value of x's type is a value of the middle type), e.g. f16 -> f32 -> bf16
  becomes f16 -> bf16; a rounding inner cast (f32 -> bf16 -> f16) is kept;
* ``reshape(reshape(x))`` becomes one reshape; a reshape to x's shape is removed;
* ``transpose(transpose(x))`` becomes one transpose; an identity permutation is
  removed;
* a ``slice`` of the whole tensor with step 1 is removed;
* a rounding ``cast`` (to f16 or bf16) of a reduction's f32 result that
  nothing else reads, directly or through a reshape, becomes the
  reduction's own result type: the reduction accumulates in f32 whatever
  it stores and rounds once at the store, as the cast did, and the cast is
  no kernel of its own.

Before::

    %0 = "dnn.cast"(%arg0) : (tensor<4x7xf16>) -> tensor<4x7xf32>
    %1 = "dnn.cast"(%0) : (tensor<4x7xf32>) -> tensor<4x7xbf16>
    %2 = "dnn.transpose"(%arg1) {permutation = array<i64: 1, 0>} : ...
    %3 = "dnn.transpose"(%2) {permutation = array<i64: 1, 0>} : ...
    return %1, %3

After::

    %0 = "dnn.cast"(%arg0) : (tensor<4x7xf16>) -> tensor<4x7xbf16>
    return %0, %arg1

Lit test: test/lit/passes/dnn_canonicalize.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.dialect import builders
from dnnc.passes import DnncPass, dnn_ops, register

# For a source element type, the types that hold every one of its values exactly
# (NaN and inf included): a cast into them is exact. i1 casts to 0.0 / 1.0.
_EXACT_TARGETS = {
    "i1": {"f32", "f16", "bf16", "f8E4M3FN", "f8E5M2"},
    "f8E4M3FN": {"f32", "f16", "bf16"},  # 3 mantissa bits, exponents 2^-9 .. 2^8
    "f8E5M2": {"f32", "f16", "bf16"},  # 2 mantissa bits, exponents 2^-16 .. 2^15
    "f16": {"f32"},
    "bf16": {"f32"},
    "f32": set(),
    "si8": {"f32", "f16", "bf16", "i32"},  # integers of magnitude <= 256: exact in bf16
    "ui8": {"f32", "f16", "bf16", "i32"},
}


def _element(value):
    return str(ir.RankedTensorType(value.type).element_type)


def _replace(view, value):
    """Replace the op's single result by ``value`` and erase the op."""
    view.operation.results[0].replace_all_uses_with(value)
    view.operation.erase()
    return True


def _producer(value, name):
    """The OpView of the dnn op ``name`` that defines ``value``, else None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    owner = owner.operation
    if owner.name != f"dnn.{name}":
        return None
    return builders.read(owner)


def _rebuild(view, name, operands, attrs):
    """A new op ``name`` at ``view``'s place with its result type and dnn.* attributes;
    it replaces ``view``."""
    # builders.create encodes attributes before it sees loc: give it a default one.
    with view.operation.location:
        new = builders.create(name, operands, attrs, {"y": view.operation.results[0].type},
                              discardable=view.discardable,
                              ip=ir.InsertionPoint(view.operation))
    return _replace(view, new.results["y"])


# ----------------------------------------------------------------------------
# Rules: each takes an OpView and returns True when it changed the IR.


def erase_dead(view):
    """A pure op whose results are all unused goes away."""
    if any(list(r.uses) for r in view.operation.results):
        return False
    view.operation.erase()
    return True


def fold_cast(view):
    """cast to the same type -> x; cast(cast(x)) with an exact inner cast -> cast(x);
    a rounding cast of an f32 reduction -> the reduction of the cast's type."""
    x = view.operands["x"]
    y = view.results["y"]
    if x.type == y.type:
        return _replace(view, x)
    inner = _producer(x, "cast")
    if inner is None:
        return round_in_reduction(view)
    source = inner.operands["x"]
    if _element(x) not in _EXACT_TARGETS.get(_element(source), ()):
        return False  # the inner cast rounds; skipping it would change the result
    if source.type == y.type:
        return _replace(view, source)
    return _rebuild(view, "cast", {"x": source}, {})


# Types a reduction's f32 accumulator is rounded to at its store as a cast would
# round it (codegen/linalg/reduce.py).
_ROUNDED = {"f16", "bf16"}


def _single_use(value):
    return len(list(value.uses)) == 1


def round_in_reduction(view):
    """cast(reduction(x)) -> reduction(x) of the cast's type, also through a
    reshape between them (cast(reshape(r)) -> reshape(r')), when the
    reduction's f32 result has no other use: its accumulator is f32 whatever
    its result type, and rounding it once at the store is the cast, so the
    cast (a launch of its own after a column reduction: a layernorm's dscale
    and dbias in bf16) goes."""
    target = _element(view.results["y"])
    x = view.operands["x"]
    reshape = _producer(x, "reshape")
    value = reshape.operands["x"] if reshape is not None else x
    reduction = _producer(value, "reduction")
    if reduction is None or target not in _ROUNDED or _element(value) != "f32" or \
            not _single_use(value) or (reshape is not None and not _single_use(x)):
        return False
    source = ir.RankedTensorType(value.type)
    with reduction.operation.location:
        rounded = ir.RankedTensorType.get(
            list(source.shape), ir.RankedTensorType(view.results["y"].type).element_type)
        new = builders.create("reduction", dict(reduction.operands), reduction.attrs,
                              {"y": rounded}, discardable=reduction.discardable,
                              ip=ir.InsertionPoint(reduction.operation))
    result = new.results["y"]
    if reshape is None:
        return _replace(view, result)
    return _rebuild(view, "reshape", {"x": result}, {})


def fold_reshape(view):
    """reshape to the same shape -> x; reshape(reshape(x)) -> reshape(x)."""
    x = view.operands["x"]
    y = view.results["y"]
    if x.type == y.type:
        return _replace(view, x)
    inner = _producer(x, "reshape")
    if inner is None:
        return False
    source = inner.operands["x"]
    if source.type == y.type:
        return _replace(view, source)
    return _rebuild(view, "reshape", {"x": source}, {})


def fold_transpose(view):
    """Identity permutation -> x; transpose(transpose(x)) -> one transpose."""
    perm = list(view.attrs["permutation"])
    x = view.operands["x"]
    if perm == list(range(len(perm))):
        return _replace(view, x)
    inner = _producer(x, "transpose")
    if inner is None:
        return False
    # y[j] = t[perm[j]] = x[inner[perm[j]]]
    first = inner.attrs["permutation"]
    combined = [first[p] for p in perm]
    source = inner.operands["x"]
    if combined == list(range(len(combined))):
        return _replace(view, source)
    return _rebuild(view, "transpose", {"x": source}, {"permutation": combined})


def fold_slice(view):
    """A slice of everything with step 1 -> x."""
    shape = list(ir.RankedTensorType(view.operands["x"].type).shape)
    a = view.attrs
    if (all(s == 0 for s in a["start"]) and list(a["limit"]) == shape
            and all(k == 1 for k in a["step"])):
        return _replace(view, view.operands["x"])
    return False


FOLDS = {
    "cast": fold_cast,
    "reshape": fold_reshape,
    "transpose": fold_transpose,
    "slice": fold_slice,
}


def canonicalize(module):
    """Apply the rules until nothing changes; return the number of rewrites."""
    total = 0
    while True:
        changed = 0
        # Users before producers: erasing a dead user can make its producer dead in
        # the same sweep. Every rule erases only the op it is given, so the
        # remaining ops of the list stay valid.
        for op in reversed(dnn_ops(module)):
            view = builders.read(op)
            if erase_dead(view):
                changed += 1
                continue
            fold = FOLDS.get(view.name)
            if fold is not None and fold(view):
                changed += 1
        if not changed:
            return total
        total += changed


@register
@dataclass
class DnnCanonicalize(DnncPass):
    NAME = "dnn-canonicalize"

    def run(self, module):
        canonicalize(module)

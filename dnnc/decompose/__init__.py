"""Decomposition of composite dnn ops into primitive dnn ops.

Primitive ops are the ones the CPU lowering and the simple GPU kernels implement
directly: pointwise ops (with cast, constant and gen_index), reduction, matmul,
the convolutions, pooling and the tensor ops. Every other op is composite and
has a rule here that rewrites it, in place, into primitive ops (or, for
instancenorm, into the more general groupnorm, which is expanded in turn):

    norm.py       layernorm, rmsnorm, groupnorm, instancenorm (+ backward)
    batchnorm.py  batchnorm, batchnorm_inference, batchnorm_backward
    attention.py  sdpa, sdpa_backward
    softmax.py    softmax, log_softmax (+ backward)

A rule is ``rule(builder, view) -> {result name: Value}``: it reads the op's
OpView and emits the replacement through a ``common.Builder``. Intermediates are
f32; ``expand_op`` casts any result whose element type differs from the
original's (a rule usually avoids that by giving its last op ``out=``).
Statistics results (mean, inv_variance, stats...) are f32, as declared.

    expand_all(module)             every composite op, until none is left
    expand(module, ["softmax"])    the chosen ops only (and what they expand to,
                                   when that is chosen too)

The pass ``dnn-decompose`` (dnnc/passes/dnn_decompose.py) runs these.
"""

from dnnc.decompose import attention, batchnorm, norm, softmax
from dnnc.decompose.common import Builder, dtype_of, shape_of
from dnnc.dialect import builders
from dnnc.dialect.walk import dnn_ops
from dnnc.errors import LoweringError, UnsupportedError

# op name (without "dnn.") -> rule
COMPOSITE_OPS = {**norm.RULES, **batchnorm.RULES, **attention.RULES, **softmax.RULES}


def expand_op(op):
    """Expand one op in place if it is composite; return whether it was."""
    operation = getattr(op, "operation", op)
    name = operation.name
    if not name.startswith("dnn.") or name[4:] not in COMPOSITE_OPS:
        return False
    view = builders.verify(operation)
    with operation.context, operation.location:
        b = Builder(view)
        values = COMPOSITE_OPS[view.name](b, view)
        replacements = []
        for result, old in view.results.items():
            if old is None:
                continue
            new = b.cast(values[result], dtype_of(old))
            if shape_of(new) != shape_of(old):
                raise LoweringError(f"decomposing '{name}' result '{result}': expected shape "
                                    f"{shape_of(old)}, got {shape_of(new)}")
            replacements.append((old, new))
        for old, new in replacements:
            old.replace_all_uses_with(new)
    operation.erase()
    return True


def _composite_ops(module, names):
    """The ops under ``module`` named ``dnn.<name>`` for a name in ``names``."""
    return [op for op in dnn_ops(module) if op.name[4:] in names]


def expand(module, ops):
    """Expand the composite ops named in ``ops`` (names without "dnn."), in every
    function of ``module``, repeatedly, until none of them is left. Returns the
    number of ops expanded."""
    names = {n[4:] if n.startswith("dnn.") else n for n in ops}
    unknown = sorted(names - set(COMPOSITE_OPS))
    if unknown:
        raise UnsupportedError(f"cannot decompose '{unknown[0]}': expected a composite op, one "
                               f"of {', '.join(sorted(COMPOSITE_OPS))}")
    count = 0
    while True:
        found = _composite_ops(module, names)
        if not found:
            return count
        for op in found:
            count += expand_op(op)


def expand_all(module):
    """Expand every composite op of ``module`` until none is left."""
    return expand(module, COMPOSITE_OPS)


__all__ = ["COMPOSITE_OPS", "expand", "expand_all", "expand_op"]

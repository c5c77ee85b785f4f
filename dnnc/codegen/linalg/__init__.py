"""Lowering of primitive dnn ops to linalg-on-tensors, tensor, arith and math.

``LOWERINGS[op name](view)`` emits the replacement of one dnn op at the
current insertion point and returns its result Values by result name. ``view``
is the op read back with ``dnnc.dialect.builders.read`` (attributes completed
with their defaults); its operands are already the lowered Values. The pass
``convert-dnn-to-linalg`` (dnnc/passes/convert_dnn_to_linalg.py) walks the
functions and calls these.

Files, one family each: ``pointwise`` (+ ``scalar`` formulas; ``fp8`` holds the integer
fp8 conversions that dnn-expand-fp8 uses), ``contraction`` (matmul, tf32), ``conv``, ``reduce``,
``pooling`` (+ ``window`` geometry), ``tensor`` (data movement); ``emit``
holds the shared builders.
"""

from dnnc.codegen.linalg import contraction, conv, pointwise, pooling, reduce, tensor
from dnnc.codegen.linalg.scalar import SCALAR


def _table():
    table = {name: pointwise.lower_pointwise for name in SCALAR}
    table.update({
        "cast": pointwise.lower_cast,
        "constant": pointwise.lower_constant,
        "gen_index": pointwise.lower_gen_index,
        "reshape": tensor.lower_reshape,
        "transpose": tensor.lower_transpose,
        "slice": tensor.lower_slice,
        "concat": tensor.lower_concat,
        "matmul": contraction.lower_matmul,
        "matmul_block_scaled": contraction.lower_matmul_block_scaled,
        "conv_fprop": conv.lower_conv_fprop,
        "conv_dgrad": conv.lower_conv_dgrad,
        "conv_wgrad": conv.lower_conv_wgrad,
        "reduction": reduce.lower_reduction,
        "pooling": pooling.lower_pooling,
        "pooling_backward": pooling.lower_pooling_backward,
    })
    return table


LOWERINGS = _table()

# Families the decomposition (dnnc/decompose) expands into primitive ops.
COMPOSITE_FAMILIES = ("norm", "softmax", "attention")

__all__ = ["LOWERINGS", "COMPOSITE_FAMILIES"]

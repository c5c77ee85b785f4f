"""What a tensor-core attention kernel needs to know of a ``dnn.sdpa`` or
``dnn.sdpa_backward`` that its expansion into matmuls, reductions and
pointwise ops (dnnc/decompose/attention.py) no longer says plainly: the
``dnn.attention`` attribute of its kernel function, recorded before the
expansion (convert-dnn-to-linalg).

Fields: ``op`` (sdpa or sdpa_backward), ``scale`` (f64), ``causal`` (bool),
``diagonal`` (top_left or bottom_right), ``window`` (i64, 0 for none) and
``padding`` (bool): the op's masks, ``max_seq_len_kv`` (i64, only with
a paged k and v: their Skv), ``ragged_strides`` (only with ragged tensors:
the op's attribute, one sequence stride per ragged_* operand),
``operands`` (which block argument of the function each of q, k, v, bias,
seq_len_q, seq_len_kv and the page tables is, for the backward q, k, v, o, do, stats, bias and
the lengths; -1 for none, or for
one computed in the kernel) and ``results`` (which operand of the
function's return each of o and stats, or dq, dk, dv and dbias, is; -1
for none) and ``returned`` (how many values the function returns). After bufferization a returned
value is the out-parameter at (number of arguments - returned + its
position).
"""

from mlir import ir

ATTR = "dnn.attention"
OPERANDS = ("q", "k", "v", "bias", "seq_len_q", "seq_len_kv", "page_table_k", "page_table_v",
            "ragged_q", "ragged_k", "ragged_v", "ragged_o")
RESULTS = ("o", "stats")
BACKWARD_OPERANDS = ("q", "k", "v", "o", "do", "stats", "bias", "seq_len_q", "seq_len_kv",
                     "ragged_q", "ragged_k", "ragged_v", "ragged_o", "ragged_do", "ragged_dq",
                     "ragged_dk", "ragged_dv")
BACKWARD_RESULTS = ("dq", "dk", "dv", "dbias")


def roles(op):
    """(operand names, result names) the attribute lists for op ``op``."""
    return (OPERANDS, RESULTS) if op == "sdpa" else (BACKWARD_OPERANDS, BACKWARD_RESULTS)


def describe(view, fn):
    """The ``dnn.attention`` attribute of the sdpa ``view`` in kernel
    function ``fn`` (a func.func operation), or None when the sdpa is not
    the kernel's whole work (a result used by another op of the kernel)."""
    block = fn.regions[0].blocks[0]
    arguments = list(block.arguments)
    ret = list(block.operations)[-1]
    returned = list(ret.operands)

    def index(value, among):
        return next((i for i, x in enumerate(among) if x == value), -1)

    operand_names, result_names = roles(view.name)
    results = []
    for name in result_names:
        value = view.results.get(name)
        if value is None:
            results.append(-1)
            continue
        if any(use.owner.operation != ret.operation for use in value.uses):
            return None
        results.append(index(value, returned))
    a = view.attrs
    paged = {"max_seq_len_kv": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                  int(a["max_seq_len_kv"]))} \
        if a.get("max_seq_len_kv", 0) else {}
    if any(a.get("ragged_strides", ())):
        paged["ragged_strides"] = ir.DenseI64ArrayAttr.get(list(a["ragged_strides"]))
    return ir.DictAttr.get({
        **paged,
        "op": ir.StringAttr.get(view.name),
        "scale": ir.FloatAttr.get(ir.F64Type.get(), float(a["scale"])),
        "causal": ir.BoolAttr.get(bool(a["causal"])),
        "diagonal": ir.StringAttr.get(a.get("diagonal", "top_left")),
        "window": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(a.get("window", 0))),
        "padding": ir.BoolAttr.get(bool(a.get("padding", False))),
        "operands": ir.DenseI64ArrayAttr.get(
            [-1 if view.operands.get(n) is None else index(view.operands[n], arguments)
             for n in operand_names]),
        "results": ir.DenseI64ArrayAttr.get(results),
        "returned": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(returned)),
    })

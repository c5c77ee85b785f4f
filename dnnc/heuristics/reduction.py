"""Rules for kernels that reduce: softmax, norms, reductions, pooling.

The faster strategy is simt-reduce (DESIGN.md): one warp or block per row or
window, 16-byte vector loads, warp shuffles, one pass where the math allows
(online softmax, Welford). simt-generic instead gives each *row* one thread
that loops over the row's ``extent`` elements, so the row count sets the
parallelism: few rows get 128-thread blocks (more blocks over the SMs).
Big blocks are never ranked first here: a looping thread makes long blocks.

``rows_and_extent`` reads the anchor's shapes and attributes per op.
"""

from dnnc.heuristics import pointwise
from dnnc.heuristics.config import Config
from dnnc.heuristics.generic import simt_generic

FASTER = "simt-reduce"


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


def rows_and_extent(problem):
    """(independent rows, elements reduced per row) of the anchor op."""
    op = problem.anchor
    x = problem.anchor_inputs[0] if problem.anchor_inputs else None
    y = problem.anchor_outputs[0] if problem.anchor_outputs else None
    if x is None or y is None:
        return problem.output_elements, 1
    shape, total = x.shape, x.elements
    if op in ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward"):
        axis = problem.attr("axis", len(shape) - 1)
        extent = shape[axis] if shape else 1
    elif op in ("layernorm", "rmsnorm", "layernorm_backward", "rmsnorm_backward"):
        extent = _prod(shape[problem.attr("axis", len(shape) - 1):])
    elif op in ("batchnorm", "batchnorm_backward"):
        extent = total // max(1, shape[1]) if len(shape) > 1 else total
    elif op in ("groupnorm", "groupnorm_backward"):
        extent = total // max(1, shape[0] * problem.attr("groups", 1))
    elif op in ("instancenorm", "instancenorm_backward"):
        extent = _prod(shape[2:])
    elif op in ("pooling", "pooling_backward"):
        window = problem.attr("window", ())
        return (y.elements, _prod(window)) if window else (y.elements, 1)
    elif op == "reduction":
        return y.elements, total // max(1, y.elements)
    else:  # batchnorm_inference: pointwise, given the statistics
        return total, 1
    extent = max(1, extent)
    return max(1, total // extent), extent


# Anchors whose kernels are row programs when they reduce the innermost axis
# alone (dnn-reduce-rows checks the kernel itself and falls back otherwise).
ROW_OPS = ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward",
           "layernorm", "rmsnorm", "reduction")
# Vectors of a row per thread a block aims at; rows of at most WARP_ROW
# vectors get a warp each, four rows to a 128-thread block.
VECTORS_PER_THREAD = 4
WARP_ROW = 128


def innermost_only(problem):
    """True when the anchor reduces its operand's innermost axis alone."""
    x = problem.anchor_inputs[0] if problem.anchor_inputs else None
    if x is None or not x.shape:
        return False
    last = len(x.shape) - 1
    if problem.anchor == "reduction":
        return tuple(problem.attr("axes", ())) == (last,)
    return problem.attr("axis", last) in (last, -1)


def simt_reduce(problem, rows, extent):
    """The simt-reduce config of a row problem, or None."""
    if problem.anchor not in ROW_OPS or not innermost_only(problem) or extent < 2:
        return None
    width = pointwise.vector_width(problem)
    while width > 1 and extent % width:
        width //= 2
    vectors = extent // width
    facts = f"{problem.anchor}: {rows} rows of {extent}"
    if vectors <= WARP_ROW:
        chunks = -(-vectors // 32)
        return Config("simt-reduce", (128, 1, 1), tile=(4,), vector=width,
                      reason=f"{facts}: a warp per row, 4 rows per block, vectors of "
                             f"{width}, {chunks} per thread")
    threads = 64
    while threads < 1024 and threads * VECTORS_PER_THREAD < vectors:
        threads *= 2
    chunks = -(-vectors // threads)
    return Config("simt-reduce", (threads, 1, 1), vector=width,
                  reason=f"{facts}: a block of {threads} per row, vectors of {width}, "
                         f"{chunks} per thread")


def rank(problem):
    rows, extent = rows_and_extent(problem)
    fast = simt_reduce(problem, rows, extent)
    if fast is not None:
        return [fast] + simt_generic(rows, problem.sms, None,
                                     f"{problem.anchor}: {rows} rows of {extent}")
    if extent == 1:  # nothing to reduce: a pointwise problem
        return pointwise.rank(problem)
    what = "windows" if problem.family == "pooling" else "rows"
    facts = f"{problem.anchor}: {rows} {what} of {extent}"
    return simt_generic(rows, problem.sms, FASTER, facts)

"""Which strategy every kernel of the benchmark cases and the GPU test cases
gets on sm_90a, and which of those on ``simt-generic`` are allowed to be.

``simt-generic`` (one thread per output, composite ops in several launches)
exists so that every graph runs; a common problem that lands on it is a
performance bug. The audit compiles each case up to the ``gpu`` stage (the
strategies are final there; no PTX is made), lists every kernel function
that launches with its anchor op, strategy and the heuristics' reason, and
checks each ``simt-generic`` one against ``ALLOWED``: an entry names the
anchor ops it covers and a pattern of the reason the plan gives, and says
why the kernel may stay there and what would move it. A kernel no entry
covers fails the audit (test/python/test_strategy_audit.py), and so does an
entry that covers no kernel (it would hide the next one).

    .venv/bin/python tools/audit-strategies              # the table and the verdict
    .venv/bin/python tools/audit-strategies --markdown   # ALLOWED as docs/performance.md has it

The GPU test cases include, on purpose, what falls back (odd channel
counts, NCHW operands, exact f32): the entries are those reasons. The
benchmark cases are the common problems; none of their kernels may be on
``simt-generic`` (no entry covers a bench case).
"""

import functools
import os
import re
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCH = "sm_90a"
GENERIC = "simt-generic"
CONTRACTIONS = ("matmul", "conv_fprop", "conv_dgrad", "conv_wgrad", "sdpa", "sdpa_backward")
CONVOLUTIONS = ("conv_fprop", "conv_dgrad", "conv_wgrad")


@dataclass(frozen=True)
class Allowed:
    """``simt-generic`` kernels of ``anchors`` whose reason matches
    ``reason`` (a regular expression, searched), in GPU test cases only;
    ``why`` they may stay there, and the ``issue`` that would move them."""

    name: str
    anchors: tuple
    reason: str
    why: str
    issue: str

    def covers(self, kernel):
        return kernel.anchor in self.anchors and re.search(self.reason, kernel.reason)


ALLOWED = (
    Allowed("exact f32 convolution or attention", CONVOLUTIONS + ("sdpa", "sdpa_backward"),
            r"an f32 multiply \(the tensor cores take f32 as tf32",
            "f32 operands multiplied in f32, as the graph's compute type asks: the tensor cores "
            "take f32 only as tf32, and simt-gemm (the FFMA GEMM of exact f32 matmuls) runs "
            "no implicit GEMM or attention yet",
            "33 (exact f32 convolution and attention on simt-gemm)"),
    Allowed("exact f32 matmul with two batch dims", ("matmul",),
            r"simt-gemm does not apply \(batch dims \[[\d, ]+\] broadcast against each other",
            "an exact f32 matmul whose two batch dims broadcast against each other: simt-gemm "
            "addresses one batch dim (tc-sm80 unravels several, but multiplies f32 only as "
            "tf32)", "33 (exact f32 matmul)"),
    Allowed("filter gradient tile across filter taps", ("conv_wgrad",),
            r"^for when tc-sm90 does not apply \(conv_wgrad|in tiles of \d+ columns: a tile "
            r"must lie in one filter tap",
            "a filter gradient whose C is not a multiple of a tile's width: a tile must lie "
            "in one filter tap",
            "30 (filter gradients of any C)"),
    Allowed("grouped convolution with few channels a group", CONVOLUTIONS,
            r"groups of \d+ channels: a group's channels are read in whole K steps|"
            r"\d+ groups: tc-sm80 convolutions take one so far",
            "groups with fewer channels than a K step (tc-sm90) or more than one group "
            "(tc-sm80); the SIMT direct convolution for small groups is not built yet",
            "30 (small groups)"),
    Allowed("depthwise or small-group convolution on strided channels", CONVOLUTIONS,
            r"simt-depthwise does not apply \(x's channels are not contiguous\)",
            "a depthwise or small-group convolution of an NCHW x: simt-depthwise reads "
            "channel vectors", "30 (depthwise)"),
    Allowed("tf32 filter gradient of C no multiple of 64", ("conv_wgrad",),
            r"tc-sm90 does not take this tf32 filter gradient",
            "a grouped tf32 filter gradient whose C (a group's) is no multiple of 64: "
            "tc-sm90's transposed product's tiles lie in one filter tap, and tc-sm80 takes "
            "one group",
            "30 (tf32 gradients)"),
    Allowed("int8 contraction", ("matmul", "conv_fprop"),
            r"(si8|ui8), a type no tensor-core path takes|a prologue on [AB] stored as [su]?i8",
            "int8 / uint8 operands (exact int32 sums) or an int8 operand cast to a float "
            "type: wgmma's and mma.sync's s8 forms are not used yet", "32, 33"),
    Allowed("matmul of K = 0 over an odd N", ("matmul",),
            r"K = 0: the epilogue of a zero product, pointwise: simt-pointwise needs a vector "
            r"dim",
            "K = 0: C is 0 and the kernel is the epilogue on it, pointwise work, whose odd "
            "rows give simt-pointwise no vectors; memory-bound all the same, one element a "
            "thread", "33"),
    Allowed("f32 matmul of K = 0", ("matmul",), r"\d+x\d+x0 \(M x N x K\)( x\d+ batch)? f32",
            "an empty reduction: the output is the epilogue on zeros (the contraction folds "
            "away), no GEMM to run", "33"),
    Allowed("fp8 matmul of rows TMA cannot read", ("matmul",),
            r"nor does tc-sm80 \(f8E\w+ operands: expected",
            "fp8 operands whose rows of K are not a multiple of 16 bytes (K not a multiple of "
            "16): tc-sm90's TMA and its K-major copy cannot read them, and tc-sm80 has no fp8 "
            "form", "33 (matmul of any alignment)"),
    Allowed("attention with a bias of another type", ("sdpa", "sdpa_backward"),
            r"a (bf16|f16) bias with (bf16|f16) q, k, v",
            "a bias whose type is neither q's nor f32", "31"),
    Allowed("attention over pages of an odd size", ("sdpa",),
            r"a paged K and V of page size \d+: expected a multiple of 64",
            "pages that are not a multiple of 64 rows nor 8, 16 or 32: a kv tile's TMA loads "
            "cannot step them", "31 (paged KV)"),
    Allowed("reduction over every axis or an empty one, softmax over a middle axis",
            ("reduction", "softmax"),
            r"simt-reduce not implemented yet \((reduction: 1 rows of \d+|reduction: \d+ rows "
            r"of 0|softmax: \d+ rows of \d+)\)",
            "a reduction to one element (no column to split the rows over, no row program "
            "over the leading axes) or over an axis of size 0, and a softmax along an axis "
            "that is not the innermost", "33"),
    Allowed("pointwise over an odd innermost dim",
            ("pointwise", "reduction", "layernorm", "rmsnorm", "softmax", "log_softmax"),
            r"simt-pointwise needs a vector dim that is a multiple of \d+ elements at least, "
            r"got \d+",
            "an innermost dim of an odd length (127, 5): simt-pointwise's vectors need an even "
            "one; memory-bound all the same, one element a thread", "33"),
    Allowed("data movement without a vector or tile program", ("tensor", "concat"),
            r"no faster strategy planned \(copy by|simt-pointwise does not apply \(a slice "
            r"that starts at|simt-transpose does not apply \(one axis to copy",
            "a reshape, slice or concat copy whose dims give no 16-byte vectors, or a "
            "transpose of one axis", "33"),
    Allowed("layout copies made after the heuristics", ("copy",),
            r"^$|^created by dnn-conv-layouts after the heuristics: .* pixels padded to 16 bytes",
            "a strided graph input or output copied for a simt-generic kernel "
            "(dnn-io-strides), or an operand's pixels padded to 16 bytes for a tensor-core "
            "convolution (dnn-conv-layouts)", "30, 33"),
)


@dataclass(frozen=True)
class Row:
    """One kernel of one case, with the entry that allows it (None if none
    does or it is not on simt-generic)."""

    case: str
    source: str     # "bench" or "gpu test"
    kernel: object  # dnnc.plan.KernelStrategy
    allowed: object

    @property
    def failing(self):
        return self.kernel.strategy == GENERIC and self.allowed is None


def _paths():
    for path in (ROOT, os.path.join(ROOT, "runtime"), os.path.join(ROOT, "bench"),
                 os.path.join(ROOT, "test", "gpu")):
        if path not in sys.path:
            sys.path.insert(0, path)


@functools.lru_cache(maxsize=None)
def cases():
    """[(source, case)]: the benchmark cases, then the GPU test cases."""
    _paths()
    from cases import CASES as BENCH  # bench/cases.py
    from gpu_cases import CASES as GPU  # test/gpu/gpu_cases

    return tuple([("bench", c) for c in BENCH] + [("gpu test", c) for c in GPU])


def audit_case(index):
    """The Rows of ``cases()[index]``: compiled for sm_90a to the gpu stage,
    with the case's config override and no tuning database. (By index: a
    case holds lambdas, which worker processes cannot be sent.)"""
    from dnnc import plan

    source, case = cases()[index]
    module = case.build().compile(target="cuda", arch=ARCH, tuning_db="off",
                                  config=case.config, stop_after="gpu")
    rows = []
    for kernel in plan.strategies(module):
        allowed = None
        if kernel.strategy == GENERIC and source == "gpu test":
            allowed = next((a for a in ALLOWED if a.covers(kernel)), None)
        rows.append(Row(case.name, source, kernel, allowed))
    return rows


def audit(jobs=1, match=None):
    """Every case's Rows (``match``: only cases whose name it matches), over
    ``jobs`` processes."""
    items = [i for i, (_, case) in enumerate(cases())
             if match is None or re.search(match, case.name)]
    if jobs <= 1:
        return [row for i in items for row in audit_case(i)]
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        return [row for rows in pool.imap(audit_case, items, chunksize=4) for row in rows]


def unused(rows):
    """The ALLOWED entries that cover no kernel of ``rows``."""
    used = {row.allowed.name for row in rows if row.allowed is not None}
    return [a for a in ALLOWED if a.name not in used]


def markdown():
    """ALLOWED as a Markdown table (docs/performance.md has it)."""
    lines = ["| entry | ops | why it may stay on `simt-generic` | issue |", "|---|---|---|---|"]
    for a in ALLOWED:
        lines.append(f"| {a.name} | {', '.join(a.anchors)} | {a.why} | {a.issue} |")
    return "\n".join(lines)

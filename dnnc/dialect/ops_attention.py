"""Scaled dot-product attention, forward and backward.

q is (B, H, Sq, D); k is (B, Hk, Skv, D) and v (B, Hk, Skv, Dv) with H a multiple
of Hk (grouped-query attention: query head h reads kv head h // (H / Hk)).

    s = scale * q @ k^T + bias        (bias broadcasts to (B, H, Sq, Skv))
    s = -inf where causal and j > i + shift
    s = -inf where window > 0 and j <= i + shift - window

with shift = 0 when ``diagonal`` is top_left (PyTorch's is_causal) and Skv -
Sq when it is bottom_right (cuDNN's bottom-right alignment: the last query
row sees the last key); ``window`` is a sliding window: row i sees at most
that many columns, ending at its diagonal.
    p = softmax(s, axis=-1)
    o = p @ v
    stats = logsumexp(s, axis=-1)     (B, H, Sq, 1), f32, when generate_stats

The backward (from o, stats and do = dL/do) returns dq, dk, dv and, with
``compute_dbias``, dbias = dL/dbias: ds = p * (do @ v^T - rowsum(do * o))
(the gradient of s, which the bias enters unscaled), 0 where masked, summed
over the bias's dims of size 1 that broadcast (B, H, Sq or Skv > 1).

A row whose scores are all -inf gives o = 0 and stats = -inf.

With ``padding`` (cuDNN's padding mask, variable sequence lengths), int32
operands ``seq_len_q`` and ``seq_len_kv`` of shape (B, 1, 1, 1) give each
batch entry's lengths Lq[b] and Lkv[b], clamped to [0, Sq] and [0, Skv]:

    s = -inf where i >= Lq[b] or j >= Lkv[b]

so a padded query row is fully masked (o = 0, stats = -inf, dq = 0) and a
padded key column gets no weight (dk = dv = 0); the bottom-right diagonal
is each entry's own, shift = Lkv[b] - Lq[b].

A paged KV cache (cuDNN's paged attention, forward only) replaces k and v by
caches of pages: k is (P, Hk, page_size, D) and v (Pv, Hk, page_size, Dv),
and int32 operands ``page_table_k`` and ``page_table_v`` of shape (B, 1, T, 1)
name each sequence's pages. The attribute ``max_seq_len_kv`` is then Skv (at
most T * page_size), and sequence b's kv position j lives in

    k[page_table_k[b, 0, j // page_size, 0], :, j % page_size, :]

(v likewise through page_table_v). Paging needs ``padding``: only positions
j < Lkv[b] are read, and the caller guarantees that their table entries are
pages in [0, P); entries from Lkv[b] on may hold anything (cuDNN's contract).
The rows of a named page from Lkv[b] on get no weight but may be read with
the page (tc-sm90 multiplies them by zero), so they must hold finite values,
as the padding of an unpaged k and v must.

Ragged (packed, "THD") tensors, cuDNN's ragged offsets: any of q, k, v and
o (and for the backward do, dq, dk and dv) may pack its batch entries'
sequences one after another instead of padding each to S. Its operand
``ragged_<name>`` (int32, (B + 1, 1, 1, 1)) holds element offsets: entry b
starts off[b] elements into the tensor's buffer, and its row s (head h,
column d) is the element off[b] + h * stride_h + s * stride_s + d. The
tensor keeps its logical dims (B, H, S, D) and the strides of the packed
layout with the batch dim merged into the sequence dim: stride_b = S *
stride_s, and stride_s the largest of the other three (a [T, H, D] buffer of
T = B * S rows, or one of q, k and v interleaved in a [T, 3, H, D] buffer).
The attribute ``ragged_strides`` holds stride_s of each of the op's ragged
tensors, in the order of its ``ragged_*`` operands (0 for one that is not
ragged; empty when none is). Each offset must be a multiple of it: off[b] /
stride_s is the packed row t where entry b starts, so, as a tensor of the
IR, entry b's row s is the tensor's element (t' // S, h, t' % S, d) with t'
= t + s, and elements no entry covers are not read. Ragged needs
``padding``: the lengths seq_len_q (q, o, do, dq) and seq_len_kv (k, v, dk,
dv), clamped to [0, S], say how many rows each entry has; its rows past them
belong to the next entry (or are the buffer's end). Entries must not overlap
and must lie within the buffer's B * S packed rows (a row past them reads
as zero and is not written); off[B], the end of the last entry, is not read.
Unlike FlashAttention's cu_seqlens, the entries need not be in order nor
adjacent. The statistics stay padded (B, H, Sq, 1). A ragged
result is written at its entries' rows below their lengths only; what its
other elements hold is unspecified (tc-sm90 leaves them as they were, the
decomposition writes 0). As with padding, the rows the entries do not own
that share a kernel's tile with them (the next entry's, the buffer's end)
may be read and multiplied by zero, so a ragged k, v, q and do must hold
finite values there. A paged k and v are not ragged.
"""

from dnnc.dialect.opdef import Attr, Operand, Result, TensorInfo, op
from dnnc.dialect.types import data_type

SDPA_ATTRS = (
    Attr("scale", "float", doc="multiplies q @ k^T; usually 1 / sqrt(D)"),
    Attr("causal", "bool", False),
    Attr("diagonal", "str", "top_left", ("top_left", "bottom_right"),
         doc="where the causal diagonal and the window's right end lie"),
    Attr("window", "int", 0, doc="columns a row sees at most, ending at its diagonal; 0: all"),
    Attr("padding", "bool", False,
         doc="rows from seq_len_q[b] and columns from seq_len_kv[b] are padding"),
)
PAGED_ATTRS = (Attr("max_seq_len_kv", "int", 0,
                    doc="Skv of a paged k and v (page_table_k, page_table_v); 0 unpaged"),)
LENGTHS = (Operand("seq_len_q", optional=True, dtype="int32"),
           Operand("seq_len_kv", optional=True, dtype="int32"))
PAGE_TABLES = (Operand("page_table_k", optional=True, dtype="int32"),
               Operand("page_table_v", optional=True, dtype="int32"))
# The tensors that may be ragged, forward and backward, in operand order;
# each one's offsets are operand "ragged_<name>".
RAGGED = ("q", "k", "v", "o")
BACKWARD_RAGGED = RAGGED + ("do", "dq", "dk", "dv")
RAGGED_ATTRS = (Attr("ragged_strides", "ints", (),
                     doc="the sequence stride of each ragged tensor, in the order of the "
                         "ragged_* operands (0: not ragged); empty: none is ragged"),)


def _ragged_operands(names):
    return tuple(Operand(f"ragged_{n}", optional=True, dtype="int32") for n in names)


def paged(operands):
    """Whether an sdpa's k and v are paged caches (its operands by name)."""
    return any(operands.get(n) is not None for n in ("page_table_k", "page_table_v"))


def _check_qkv(ctx):
    for name in ("q", "k", "v"):
        ctx.expect_rank(name, 4)
    window = ctx.attrs.get("window", 0)
    if window < 0:
        ctx.fail("attribute 'window'", f"expected 0 (no window) or a positive length, got "
                                         f"{window}")
    q, k, v = ctx["q"], ctx["k"], ctx["v"]
    b, h, sq, d = q.shape
    hk, skv = k.shape[1], k.shape[2]
    if k.shape[0] != b and not paged(ctx.operands):
        ctx.fail_dim("k", 0, b, k.shape[0], "batch of 'q'")
    if hk < 1 or h % hk:
        ctx.fail_dim("k", 1, f"a divisor of {h}", hk, "heads of 'q'")
    if k.shape[3] != d:
        ctx.fail_dim("k", 3, d, k.shape[3], "head dim of 'q'")
    if paged(ctx.operands):
        skv = _check_pages(ctx, b, hk)
    else:
        if ctx.attrs.get("max_seq_len_kv", 0):
            ctx.fail("attribute 'max_seq_len_kv'", f"expected 0 without page tables, got "
                                                   f"{ctx.attrs['max_seq_len_kv']}")
        ctx.expect_shape("v", (b, hk, skv, v.shape[3]), "batch, heads and length of 'k'")
    bias = ctx.operands.get("bias")
    if bias is not None:
        full = (b, h, sq, skv)
        if bias.rank != 4:
            ctx.fail("operand 'bias'", f"expected rank 4, got rank {bias.rank}")
        for i, (want, got) in enumerate(zip(full, bias.shape)):
            if got not in (want, 1):
                ctx.fail_dim("bias", i, f"{want} or 1", got, "broadcast to B, H, Sq, Skv")
    _check_lengths(ctx, b)
    return b, h, sq, d, hk, skv, v.shape[3]


def ragged_tensors(operands):
    """The names of an sdpa's ragged tensors (its operands by name)."""
    return [n for n in BACKWARD_RAGGED if operands.get(f"ragged_{n}") is not None]


def _check_ragged(ctx, names, b):
    """The ragged offsets and their strides (module docstring)."""
    given = ragged_tensors(ctx.operands)
    strides = tuple(ctx.attrs.get("ragged_strides", ()))
    if not given:
        if any(strides):
            ctx.fail("attribute 'ragged_strides'", f"expected none or zeros without ragged "
                                                   f"offsets, got {list(strides)}")
        return
    if len(strides) != len(names):
        ctx.fail("attribute 'ragged_strides'", f"expected {len(names)} values (one per "
                                               f"tensor {', '.join(names)}), got "
                                               f"{len(strides)}")
    if not ctx.attrs.get("padding", False):
        ctx.fail(f"operand 'ragged_{given[0]}'", "expected padding=True (use_padding_mask: "
                                                  "the lengths of the packed sequences) with "
                                                  "ragged offsets, got false")
    if paged(ctx.operands):
        ctx.fail(f"operand 'ragged_{given[0]}'", "expected no ragged offsets with a paged k "
                                                  "and v, got both")
    for name, stride in zip(names, strides):
        if (name in given) != (stride > 0):
            want = "a positive sequence stride" if name in given else "0 (not ragged)"
            ctx.fail("attribute 'ragged_strides'", f"entry for '{name}': expected {want}, "
                                                   f"got {stride}")
    for name in given:
        ctx.expect_shape(f"ragged_{name}", (b + 1, 1, 1, 1), "one offset per batch entry "
                                                              "and the end")


def _check_pages(ctx, b, hk):
    """The paged caches and their tables (module docstring); returns Skv,
    the attribute max_seq_len_kv."""
    given = [n for n in ("page_table_k", "page_table_v") if ctx.operands.get(n) is not None]
    if len(given) == 1:
        missing = ({"page_table_k", "page_table_v"} - set(given)).pop()
        ctx.fail(f"operand '{missing}'", f"expected an int32 tensor (B, 1, T, 1) with "
                                          f"'{given[0]}', got none")
    if not ctx.attrs.get("padding", False):
        ctx.fail("attribute 'padding'", "expected true with a paged k and v (paged attention "
                                        "needs seq_len_kv), got false")
    k, v = ctx["k"], ctx["v"]
    page = k.shape[2]
    if v.shape[1] != hk:
        ctx.fail_dim("v", 1, hk, v.shape[1], "kv heads of 'k'")
    if v.shape[2] != page:
        ctx.fail_dim("v", 2, page, v.shape[2], "page size of 'k'")
    if page < 1:
        ctx.fail_dim("k", 2, "a page size of at least 1", page)
    for name in given:
        table = ctx[name]
        if table.rank != 4:
            ctx.fail(f"operand '{name}'", f"expected rank 4 (B, 1, T, 1), got rank {table.rank}")
        for dim, want in ((0, b), (1, 1), (3, 1)):
            if table.shape[dim] != want:
                ctx.fail_dim(name, dim, want, table.shape[dim], "shape B, 1, T, 1")
    pages = ctx["page_table_k"].shape[2]
    if ctx["page_table_v"].shape[2] != pages:
        ctx.fail_dim("page_table_v", 2, pages, ctx["page_table_v"].shape[2],
                     "pages per sequence of 'page_table_k'")
    skv = ctx.attrs.get("max_seq_len_kv", 0)
    if not 1 <= skv <= pages * page:
        ctx.fail("attribute 'max_seq_len_kv'",
                 f"expected 1..{pages * page} (T = {pages} pages of {page} rows), got {skv}")
    return skv


def _check_lengths(ctx, b):
    """seq_len_q and seq_len_kv: both (B, 1, 1, 1) with ``padding``, absent
    without."""
    given = [n for n in ("seq_len_q", "seq_len_kv") if ctx.operands.get(n) is not None]
    if not ctx.attrs.get("padding", False):
        if given:
            ctx.fail(f"operand '{given[0]}'", "expected none without padding=True "
                                              "(use_padding_mask), got a tensor")
        return
    for name in ("seq_len_q", "seq_len_kv"):
        if name not in given:
            ctx.fail(f"operand '{name}'", "expected an int32 tensor (B, 1, 1, 1) with "
                                          "padding=True (use_padding_mask), got none")
        ctx.expect_shape(name, (b, 1, 1, 1), "one length per batch entry")


@op("sdpa", family="attention",
    operands=["q", "k", "v", Operand("bias", optional=True), *LENGTHS, *PAGE_TABLES,
              *_ragged_operands(RAGGED)],
    results=["o", Result("stats", optional=True)],
    attrs=SDPA_ATTRS + (Attr("generate_stats", "bool", False),) + PAGED_ATTRS + RAGGED_ATTRS)
def _sdpa(ctx):
    """Attention forward; see the module docstring."""
    b, h, sq, _, _, _, dv = _check_qkv(ctx)
    _check_ragged(ctx, RAGGED, b)
    out = {"o": TensorInfo((b, h, sq, dv))}
    if ctx.attrs["generate_stats"]:
        out["stats"] = TensorInfo((b, h, sq, 1), data_type.FLOAT)
    return out


@op("sdpa_backward", family="attention",
    operands=["q", "k", "v", "o", "do", "stats", Operand("bias", optional=True), *LENGTHS,
              *_ragged_operands(BACKWARD_RAGGED)],
    results=["dq", "dk", "dv", Result("dbias", optional=True)],
    attrs=SDPA_ATTRS + RAGGED_ATTRS + (Attr("deterministic", "bool", False,
                                            doc="every run writes the same bits (gradients "
                                                "summed in a fixed order); the faster kernels "
                                                "sum dq in any order"),
                                       Attr("compute_dbias", "bool", False,
                                            doc="also return dbias, the gradient of the "
                                                "bias (its shape and type)")))
def _sdpa_backward(ctx):
    """Attention backward from the forward's o and stats; dk and dv are summed
    over the query heads that share a kv head. With ``compute_dbias``,
    dbias is the gradient of the scores s (the bias is added after the
    scale, so it is ds itself: 0 where masked), summed over the dims the
    bias broadcasts on (its dims of size 1); any float type (Graph gives it
    the bias's unless set)."""
    b, h, sq, _, _, _, dv = _check_qkv(ctx)
    _check_ragged(ctx, BACKWARD_RAGGED, b)
    ctx.expect_shape("o", (b, h, sq, dv), "shape of the forward output")
    ctx.expect_shape("do", (b, h, sq, dv), "shape of 'o'")
    ctx.expect_shape("stats", (b, h, sq, 1), "shape B, H, Sq, 1")
    out = {"dq": TensorInfo(ctx["q"].shape), "dk": TensorInfo(ctx["k"].shape),
           "dv": TensorInfo(ctx["v"].shape)}
    if ctx.attrs.get("compute_dbias", False):
        bias = ctx.operands.get("bias")
        if bias is None:
            ctx.fail("attribute 'compute_dbias'", "expected a 'bias' operand with "
                                                  "compute_dbias=true (dbias is its "
                                                  "gradient), got none")
        out["dbias"] = TensorInfo(bias.shape)
    return out

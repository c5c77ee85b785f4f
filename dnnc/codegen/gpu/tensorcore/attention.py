"""What a tensor-core attention kernel computes: a kernel function whose
whole work is one ``dnn.sdpa`` (semantics: dnnc/dialect/ops_attention.py),
read from its ``dnn.attention`` attribute (dnnc/codegen/linalg/attention.py)
and its bufferized arguments.

The body is the sdpa's expansion (matmuls, reductions, pointwise ops) over
intermediates the size of the score matrix; a tensor-core kernel replaces it
whole and reads q, k and v and writes o (and the statistics) where they lie.

``match`` returns an ``Attention``: the buffers, the problem's sizes and
which features it uses. What it cannot read (a head dim that is not the
contiguous dim, rows TMA cannot step) raises ``NotAnAttention`` with the
reason, before any IR is changed.
"""

from dataclasses import dataclass, field

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.codegen.linalg.attention import ATTR, roles

__all__ = ["ATTR", "Attention", "AttentionBackward", "NotAnAttention", "argument_role",
           "match", "match_backward", "op_of", "rows_problem"]


class NotAnAttention(Exception):
    """The kernel is not an attention a tensor-core kernel reads; the message
    says why."""


@dataclass
class Attention:
    """q ``[B, H, Sq, D]``, k ``[B, Hk, Skv, D]``, v ``[B, Hk, Skv, Dv]``, o
    ``[B, H, Sq, Dv]`` and stats ``[B, H, Sq, 1]`` (f32, or None): memref
    values of the kernel function; ``bias`` a memref broadcasting to
    ``[B, H, Sq, Skv]`` or None. Query head h reads kv head h // (H / Hk).
    Row i sees column j when j <= i + shift (``causal``) and j > i + shift -
    window (``window`` > 0); with padding, ``seq_len_q`` and ``seq_len_kv``
    (int32 memrefs ``[B, 1, 1, 1]``) give each batch entry's lengths, past
    which rows and columns are masked, and the bottom-right shift is
    theirs; see ops_attention.py. With a paged cache, k is ``[P, Hk,
    page, D]`` and v ``[P, Hk, page, Dv]``, ``page_table_k`` and
    ``page_table_v`` (int32 memrefs ``[B, 1, T, 1]``) name each batch
    entry's pages and ``skv`` is the op's max_seq_len_kv. ``ragged`` maps
    each ragged (packed) tensor's name (q, k, v, o; do, dq, dk, dv) to its
    offsets (an int32 memref ``[B + 1, 1, 1, 1]``) and sequence stride."""

    q: object
    k: object
    v: object
    o: object
    stats: object
    bias: object
    batch: int
    heads: int
    kv_heads: int
    sq: int
    skv: int
    d: int
    dv: int
    scale: float
    causal: bool
    element: str
    diagonal: str = "top_left"
    window: int = 0
    seq_len_q: object = None
    seq_len_kv: object = None
    page_table_k: object = None
    page_table_v: object = None
    ragged: dict = field(default_factory=dict)

    @property
    def paged(self):
        """Whether k and v are paged caches."""
        return self.page_table_k is not None

    @property
    def page(self):
        """Rows a page of a paged cache holds (None unpaged)."""
        return _shape(self.k)[2] if self.paged else None

    @property
    def shift(self):
        """Row 0's diagonal column: 0 top-left aligned, Skv - Sq bottom-right
        (without padding; with it, each batch entry's Lkv - Lq)."""
        return self.skv - self.sq if self.diagonal == "bottom_right" else 0

    @property
    def padding(self):
        """Whether each batch entry has lengths of its own."""
        return self.seq_len_q is not None

    @property
    def masked(self):
        """Whether any score is masked (causal, a window or padding)."""
        return self.causal or self.window > 0 or self.padding

    @property
    def group(self):
        """Query heads per kv head."""
        return self.heads // self.kv_heads


def _shape(value):
    return list(ir.MemRefType(value.type).shape)


def _element(value):
    return str(ir.MemRefType(value.type).element_type)


def _rows_problem(name, value):
    return rows_problem(name, value.type)


def rows_problem(name, type_):
    """Why TMA cannot read or a thread cannot store the rows of a buffer of
    memref type ``type_`` (``[B, H, S, D]``, tensor ``name``), or None: D
    contiguous, every other stride a multiple of 16 bytes, a 16-byte
    aligned start. The views dnn-slice-views and dnn-transpose-views make
    for attention kernels are checked by it too."""
    shape, strides, offset = irutil.memref_geometry(type_)
    eb = 4 if str(ir.MemRefType(type_).element_type) == "f32" else 2
    if strides[3] != 1 and shape[3] != 1:
        return f"{name}'s head dim has stride {strides[3]}: expected 1 (contiguous)"
    for dim in range(3):
        if shape[dim] > 1 and (strides[dim] * eb) % 16:
            return (f"{name}'s dim {dim} has stride {strides[dim] * eb} bytes: expected a "
                    "multiple of 16")
    if (offset * eb) % 16:
        return f"{name} starts {offset * eb} bytes into its buffer: expected 16-byte alignment"
    return None


def argument_role(fn, index):
    """The name (q, k, v, o, do, dq, ...) of kernel function ``fn``'s
    argument ``index`` in the op its ``dnn.attention`` describes, or None
    (another operand, or not an attention kernel)."""
    if ATTR not in fn.attributes:
        return None
    info = ir.DictAttr(fn.attributes[ATTR])
    operand_names, result_names = roles(ir.StringAttr(info["op"]).value)
    inputs = len(irutil.body(fn).arguments) - ir.IntegerAttr(info["returned"]).value
    for name, at in zip(operand_names, ir.DenseI64ArrayAttr(info["operands"])):
        if at >= 0 and at == index:
            return name
    for name, at in zip(result_names, ir.DenseI64ArrayAttr(info["results"])):
        if at >= 0 and inputs + at == index:
            return name
    return None


def op_of(fn):
    """The op (sdpa, sdpa_backward) kernel function ``fn``'s ``dnn.attention``
    describes."""
    return ir.StringAttr(ir.DictAttr(fn.attributes[ATTR])["op"]).value


def _values(fn, required, outputs, rows, wide=()):
    """(the buffers by role, the attribute) of kernel function ``fn``: each
    of ``required`` operands must be a kernel argument and each of
    ``outputs`` an output; those named in ``rows`` are read or written in
    rows of q's element type, or of f32 for those also in ``wide`` (what
    the kernels read or write from registers, not by wgmma)."""
    info = ir.DictAttr(fn.attributes[ATTR])
    operand_names, result_names = roles(ir.StringAttr(info["op"]).value)
    operands = dict(zip(operand_names, ir.DenseI64ArrayAttr(info["operands"])))
    results = dict(zip(result_names, ir.DenseI64ArrayAttr(info["results"])))
    arguments = list(irutil.body(fn).arguments)
    inputs = len(arguments) - ir.IntegerAttr(info["returned"]).value
    values = {}
    for name in operand_names:
        at = operands.get(name, -1)
        if name in required and at < 0:
            raise NotAnAttention(f"{name} is computed in the kernel, not a kernel argument")
        values[name] = arguments[at] if at >= 0 else None
    for name in result_names:
        if name in outputs and results[name] < 0:
            raise NotAnAttention(f"{name} is not an output of the kernel")
        values[name] = arguments[inputs + results[name]] if results[name] >= 0 else None
    element = _element(values["q"])
    for name in rows:
        got = _element(values[name])
        if got != element and not (name in wide and got == "f32"):
            also = " or f32" if name in wide else ""
            raise NotAnAttention(f"{name} is {got}, q is {element}: expected {element}{also}")
    for name, dim in (("q", "D"), ("v", "Dv")):
        size = _shape(values[name])[3]
        if size % 8:
            raise NotAnAttention(f"head dim {dim} = {size}: expected a multiple of 8 (TMA "
                                 "reads rows of a multiple of 16 bytes)")
    for name in rows:
        problem = _rows_problem(name, values[name])
        if problem:
            raise NotAnAttention(problem)
    return values, info, element


def _masks(info, values):
    """(diagonal, window, seq_len_q, seq_len_kv) of the attribute and buffers."""
    padding = "padding" in info and ir.BoolAttr(info["padding"]).value
    lengths = (values["seq_len_q"], values["seq_len_kv"]) if padding else (None, None)
    if padding and any(x is None for x in lengths):
        raise NotAnAttention("the sequence lengths are computed in the kernel, not kernel "
                             "arguments")
    return (ir.StringAttr(info["diagonal"]).value if "diagonal" in info else "top_left",
            ir.IntegerAttr(info["window"]).value if "window" in info else 0) + lengths


def _sizes(values, info):
    b, h, sq, d = _shape(values["q"])
    _, hk, skv, _ = _shape(values["k"])
    if "max_seq_len_kv" in info:  # a paged cache: k's dim 2 is its page
        skv = ir.IntegerAttr(info["max_seq_len_kv"]).value
    return b, h, hk, sq, skv, d, _shape(values["v"])[3]


def _page_tables(info, values):
    """(page_table_k, page_table_v) of a paged sdpa, else (None, None)."""
    if "max_seq_len_kv" not in info:
        return None, None
    tables = (values.get("page_table_k"), values.get("page_table_v"))
    if any(x is None for x in tables):
        raise NotAnAttention("the page tables are computed in the kernel, not kernel "
                             "arguments")
    return tables


def _ragged(info, values):
    """{name: (offsets, sequence stride)} of the ragged tensors."""
    if "ragged_strides" not in info:
        return {}
    names = ("q", "k", "v", "o") if "do" not in values else \
        ("q", "k", "v", "o", "do", "dq", "dk", "dv")
    out = {}
    for name, stride in zip(names, ir.DenseI64ArrayAttr(info["ragged_strides"])):
        if not stride:
            continue
        offsets = values.get(f"ragged_{name}")
        if offsets is None:
            raise NotAnAttention(f"the ragged offsets of {name} are computed in the kernel, "
                                 "not a kernel argument")
        out[name] = (offsets, int(stride))
    return out


def match(fn):
    """The Attention of kernel function ``fn`` (it carries ``dnn.attention``
    of an sdpa); NotAnAttention when its buffers are not what the kernels
    read."""
    if ATTR not in fn.attributes or op_of(fn) != "sdpa":
        raise NotAnAttention("the kernel is not one sdpa")
    values, info, element = _values(fn, ("q", "k", "v"), ("o",), ("q", "k", "v", "o"), ("o",))
    return Attention(values["q"], values["k"], values["v"], values["o"], values["stats"],
                     values["bias"], *_sizes(values, info),
                     ir.FloatAttr(info["scale"]).value, ir.BoolAttr(info["causal"]).value,
                     element, *_masks(info, values), *_page_tables(info, values),
                     ragged=_ragged(info, values))


@dataclass
class AttentionBackward(Attention):
    """An sdpa backward: ``Attention``'s fields (o the forward's output,
    stats its log-sum-exp, f32 ``[B, H, Sq, 1]``) with ``do`` (like o) and
    the gradients ``dq``, ``dk``, ``dv`` (like q, k, v), and ``dbias`` (like
    bias, any float type; None unless the op computes it)."""

    do: object = None
    dq: object = None
    dk: object = None
    dv_grad: object = None
    dbias: object = None


def match_backward(fn):
    """The AttentionBackward of kernel function ``fn`` (it carries
    ``dnn.attention`` of an sdpa_backward); NotAnAttention when its
    buffers are not what the kernels read."""
    if ATTR not in fn.attributes or op_of(fn) != "sdpa_backward":
        raise NotAnAttention("the kernel is not one sdpa_backward")
    rows = ("q", "k", "v", "o", "do", "dq", "dk", "dv")
    values, info, element = _values(fn, ("q", "k", "v", "o", "do", "stats"),
                                    ("dq", "dk", "dv"), rows, ("o", "dq", "dk", "dv"))
    stats = values["stats"]
    if _element(stats) != "f32":
        raise NotAnAttention(f"stats is {_element(stats)}: expected f32")
    return AttentionBackward(values["q"], values["k"], values["v"], values["o"], stats,
                             values["bias"], *_sizes(values, info),
                             ir.FloatAttr(info["scale"]).value,
                             ir.BoolAttr(info["causal"]).value, element,
                             *_masks(info, values), None, None, ragged=_ragged(info, values),
                             do=values["do"], dq=values["dq"], dk=values["dk"],
                             dv_grad=values["dv"], dbias=values.get("dbias"))

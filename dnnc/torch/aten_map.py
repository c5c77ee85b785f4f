"""ATen ops onto ``dnnc.Graph``: the table of the torch.compile backend.

``TABLE`` maps an ATen overload (what AOTAutograd's graphs hold) to a
function ``(low, node) -> value`` that adds the op to ``low.graph``
(a lowering.Lowering) and returns its dnnc tensor, or a tuple of them for
an op of several results (``operator.getitem`` picks one). The functions
live by family: aten_pointwise.py (pointwise math, casts, data movement),
aten_nn.py (matmul, convolution, norms, softmax, reductions, pooling),
aten_attention.py (the fused attention ops). A function raises
``UnsupportedError`` saying why for arguments dnnc cannot take (a transposed
convolution, dropout, an attention mask of booleans); dnnc's own errors
(``GraphError``, ``VerificationError``) say the same for shapes and types its
ops refuse. ``support(node)`` tries a node alone and returns None or that
reason, which ``dnnc.torch.explain`` reports; ``lower`` adds a node of a
region, checking that what dnnc made has the dims of ATen's result.
"""

import operator

import torch

from dnnc.errors import DnncError, UnsupportedError
from dnnc.graph import Tensor
from dnnc.torch import aten_attention, aten_nn, aten_pointwise
from dnnc.torch.lowering import DTYPES, Lowering, check_static, example


# -- the table -------------------------------------------------------------------------

TABLE = {**aten_pointwise.TABLE, **aten_nn.TABLE, **aten_attention.TABLE}

# Ops that compute nothing: a region of only these stays in torch.
DATA_MOVEMENT = aten_pointwise.DATA_MOVEMENT


def op_name(node):
    """How reports name ``node``'s op: ``aten.addmm`` (its overload packet)."""
    target = node.target
    if target is operator.getitem:
        return "getitem"
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return schema.name.replace("::", ".")
    return getattr(target, "__name__", str(target))


def lower(low, node):
    """Add ``node`` to ``low`` and record its value; UnsupportedError (or
    dnnc's error) when dnnc cannot take it, or when what it made has other
    dims than the node's example."""
    fn = TABLE.get(node.target)
    if fn is None:
        raise UnsupportedError(f"{op_name(node)}: no dnnc mapping")
    val = example(node)
    check_static(val, op_name(node))
    value = fn(low, node)
    _check_dims(node, value, val)
    _take_types(value, val)
    low.env[node] = value
    return value


def _take_types(value, val):
    """Give each float result ``value`` made here its ATen type, as eager
    rounds it: a bf16 model's matmul and convolution operands are then bf16
    (the tensor cores' operands), not the graph's f32 intermediates. Results
    whose type the op fixes (statistics, comparisons) and data movement,
    which keeps its input's type, are left as they are."""
    pairs = zip(value, val) if isinstance(val, (tuple, list)) else [(value, val)]
    for v, e in pairs:
        if not (isinstance(v, Tensor) and isinstance(e, torch.Tensor)) or v.producer is None:
            continue
        node, result = v.producer
        if result in node.fixed_dtypes or node.opdef.dtype_from or e.dtype not in DTYPES \
                or not e.dtype.is_floating_point:
            continue
        v.set_data_type(DTYPES[e.dtype])


def _check_dims(node, value, val):
    if isinstance(val, (tuple, list)):
        for i, (v, e) in enumerate(zip(value, val)):
            if isinstance(v, Tensor) and isinstance(e, torch.Tensor):
                _same(node, v, e, f" result {i}")
    elif isinstance(val, torch.Tensor) and isinstance(value, Tensor):
        _same(node, value, val, "")


def _same(node, v, e, which):
    if list(v.dim) != [int(d) for d in e.shape]:
        raise UnsupportedError(f"{op_name(node)}{which}: dnnc makes dims {list(v.dim)}, ATen "
                               f"{[int(d) for d in e.shape]}")


def support(node, device_type="cpu"):
    """None when dnnc takes ``node`` (tried alone, its tensor arguments as
    inputs), else why not, as a sentence."""
    if node.op != "call_function":
        return f"{node.op}: not an op"
    if node.target not in TABLE:
        return f"{op_name(node)}: no dnnc mapping"
    low = Lowering(f"try_{node.name}", device_type)
    try:
        if node.target is operator.getitem:
            return None   # goes with its producer (partition.py)
        lower(low, node)
        for v in (low.env[node] if isinstance(low.env[node], tuple) else [low.env[node]]):
            if isinstance(v, Tensor):
                low.graph._resolve_dtype(v)
    except (UnsupportedError, DnncError) as err:
        return str(err)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as err:
        # An argument form the mapping does not know (a newer ATen schema).
        return f"{op_name(node)}: arguments not understood ({type(err).__name__}: {err})"
    return None

"""dnn-recognize-sdpa: replace the attention pattern between two matmuls by one dnn.sdpa.

The pattern, with q, k, v of rank 4 (B, H, S, D) and as many heads in k and v
as in q, or one that the matmuls broadcast over q's (multi-query attention:
sdpa's kv heads of 1); other grouped-query patterns are left alone::

    kt = transpose(k, permutation = [0, 1, 3, 2])
    s  = matmul(q, kt)
    s  = mul(s, c) | mul(c, s) | div(s, c)        optional, c a dnn.constant
    s  = add(s, bias) | add(bias, s)              optional, bias rank 4, broadcasts to s
    s  = cast(s)                                  optional
    p  = softmax(s, axis = 3)
    p  = cast(p)                                  optional
    o  = matmul(p, v)

where q and k may each come scaled by a constant (``mul(q, c)``,
``div(k, c)``; the scale before the product, as PyTorch code often writes
it), which folds into the sdpa's scale.

Every intermediate (kt, the scores, p) must have no other user, and both
matmuls must accumulate in f32 (sdpa has no tf32 mode). scale is c, 1 / c for a
div, 1.0 without a scale op. o keeps the type of the final matmul.

Before::

    %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : ...
    %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : ...
    %2 = "dnn.constant"() {value = 1.250000e-01 : f64} : () -> tensor<f32>
    %3 = "dnn.mul"(%1, %2) : ...
    %4 = "dnn.softmax"(%3) {axis = 3 : i64} : ...
    %5 = "dnn.matmul"(%4, %v) {compute_type = f32} : ...

After::

    %0 = "dnn.sdpa"(%q, %k, %v) {causal = false, diagonal = "top_left",
                                 generate_stats = false, scale = 1.250000e-01 : f64,
                                 window = 0 : i64} : ...

Lit test: test/lit/passes/dnn_recognize_sdpa.mlir.
"""

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dnnc.dialect import builders
from dnnc.dialect.types import from_mlir
from dnnc.passes import DnncPass, dnn_ops, register


@dataclass
class Match:
    """One attention pattern: the inputs of the sdpa and the ops it replaces."""

    q: object
    k: object
    v: object
    bias: object
    scale: float
    final: object  # OpView of the second matmul
    ops: list  # the ops to erase, users before producers


def _shape(value):
    return list(ir.RankedTensorType(value.type).shape)


def _defining(value, *names):
    """OpView of the dnn op defining ``value`` when it is one of ``names``."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name not in [f"dnn.{n}" for n in names]:
        return None
    return builders.read(owner.operation)


def _only_user(value, view):
    """True when every use of ``value`` is by ``view``'s op."""
    uses = list(value.uses)
    return bool(uses) and all(u.owner.operation == view.operation for u in uses)


def _f32_matmul(view):
    return view is not None and view.attrs.get("compute_type", "f32") == "f32"


def _constant_value(view):
    """The value a dnn.constant holds once rounded to its element type."""
    dtype = from_mlir(str(ir.RankedTensorType(view.results["y"].type).element_type))
    return float(np.array(view.attrs["value"]).astype(dtype.numpy))


def _constant_factor(view, accept):
    """(x, c) when ``view`` is mul(x, c), mul(c, x) or div(x, c) (1 / c
    for a div) with c a dnn.constant and ``accept(x)``; else None."""
    a, b = view.operands["a"], view.operands["b"]
    pairs = [(a, b)] if view.name == "div" else [(a, b), (b, a)]
    for x, factor in pairs:
        const = _defining(factor, "constant")
        if const is None or not accept(x):
            continue
        c = _constant_value(const)
        if view.name == "mul":
            return x, c
        return (x, 1.0 / c) if c != 0.0 else None
    return None


def _scaled_scores(view):
    """(scores, scale) when ``view`` is mul(s, c), mul(c, s) or div(s, c) with c a
    dnn.constant and s a matmul result; else None."""
    return _constant_factor(view, lambda s: _defining(s, "matmul") is not None)


def match_scores(value, user):
    """Match ``value`` (used only by ``user``) as q @ transpose(k), optionally scaled.

    Returns (q, k, scale, ops) or None."""
    if not _only_user(value, user):
        return None
    scale, ops = 1.0, []
    scaled = _defining(value, "mul", "div")
    if scaled is not None:
        found = _scaled_scores(scaled)
        if found is None:
            return None
        value, scale = found
        if not _only_user(value, scaled):
            return None
        ops = [scaled]
    mm = _defining(value, "matmul")
    if not _f32_matmul(mm):
        return None
    q, kt = mm.operands["a"], mm.operands["b"]
    tr = _defining(kt, "transpose")
    if tr is None or not _only_user(kt, mm) or list(tr.attrs["permutation"]) != [0, 1, 3, 2]:
        return None
    k = tr.operands["x"]
    ops = ops + [mm, tr]
    # A scale applied to q or to k before the product (q * c @ kᵀ, as
    # PyTorch code often writes it) folds into the sdpa's.
    for name in ("q", "k"):
        operand = q if name == "q" else k
        scaled = _defining(operand, "mul", "div")
        found = _scaled_operand(scaled, mm if name == "q" else tr) if scaled else None
        if found is not None:
            inner, c = found
            scale *= c
            ops.append(scaled)
            if name == "q":
                q = inner
            else:
                k = inner
    qs, ks = _shape(q), _shape(k)
    if len(qs) != 4 or len(ks) != 4 or qs[0] != ks[0] or ks[1] not in (qs[1], 1) \
            or qs[3] != ks[3]:
        return None
    return q, k, scale, ops


def _scaled_operand(view, user):
    """(x, c) when ``view`` is mul(x, c), mul(c, x) or div(x, c) (c a
    dnn.constant, 1 / c for a div) whose result only ``user`` uses and x
    has its shape; else None."""
    result = view.results["y"]
    if not _only_user(result, user):
        return None
    return _constant_factor(view, lambda x: _shape(x) == _shape(result))


def _float_cast(value):
    """The dnn.cast defining ``value`` when it casts between f32, bf16 and
    f16 (the roundings the sdpa makes itself, or finer); else None."""
    cast = _defining(value, "cast")
    floats = ("f32", "bf16", "f16")
    if cast is None or _element(value) not in floats or \
            _element(cast.operands["x"]) not in floats:
        return None
    return cast


def _element(value):
    return str(ir.RankedTensorType(value.type).element_type)


def _broadcasts_to(bias, shape):
    bs = _shape(bias)
    return len(bs) == 4 and all(b in (1, s) for b, s in zip(bs, shape))


def match_attention(final):
    """Match the pattern ending at the matmul ``final``; a Match or None."""
    if not _f32_matmul(final):
        return None
    p, v = final.operands["a"], final.operands["b"]
    ops = [final]
    # A cast of the probabilities (softmax in f32, then to the matmul's
    # type) is the sdpa's own rounding of P.
    p_user = final
    cast = _float_cast(p)
    if cast is not None and _only_user(p, final):
        ops.append(cast)
        p, p_user = cast.operands["x"], cast
    sm = _defining(p, "softmax")
    if sm is None or not _only_user(p, p_user):
        return None
    ops.append(sm)
    s = sm.operands["x"]
    score_shape = _shape(s)
    if len(score_shape) != 4 or sm.attrs["axis"] != 3:
        return None
    # A cast of the scores (to f32 for the softmax) likewise.
    s_user = sm
    cast = _float_cast(s)
    if cast is not None and _only_user(s, sm) and _shape(cast.operands["x"]) == score_shape:
        ops.append(cast)
        s, s_user = cast.operands["x"], cast
    found, bias = None, None
    add = _defining(s, "add")
    if add is not None and _only_user(s, s_user):
        for scores, other in ((add.operands["a"], add.operands["b"]),
                              (add.operands["b"], add.operands["a"])):
            if _shape(scores) != score_shape or not _broadcasts_to(other, score_shape):
                continue
            found = match_scores(scores, add)
            if found is not None:
                bias, ops = other, ops + [add]
                break
    if found is None:
        found = match_scores(s, s_user)
    if found is None:
        return None
    q, k, scale, score_ops = found
    b, h, sq, _ = _shape(q)
    vs = _shape(v)
    hk = _shape(k)[1]
    if len(vs) != 4 or vs[:3] != [b, hk, _shape(k)[2]] or score_shape != [b, h, sq, vs[2]]:
        return None
    return Match(q, k, v, bias, scale, final, ops + score_ops)


def rewrite(match):
    """Put the dnn.sdpa in place of the final matmul and erase the pattern."""
    final = match.final
    # builders.create encodes attributes before it sees loc: give it a default one.
    with final.operation.location:
        sdpa = builders.create(
            "sdpa", {"q": match.q, "k": match.k, "v": match.v, "bias": match.bias},
            {"scale": match.scale, "causal": False},
            {"o": final.operation.results[0].type}, discardable=final.discardable,
            ip=ir.InsertionPoint(final.operation))
    final.operation.results[0].replace_all_uses_with(sdpa.results["o"])
    constants = {}
    for view in match.ops:
        for operand in view.operation.operands:
            const = _defining(operand, "constant")
            if const is not None:
                constants[const.operation] = None
        view.operation.erase()
    for const in constants:
        # A scale constant used only by the pattern is dead now.
        if not any(list(r.uses) for r in const.results):
            const.erase()


def recognize(module):
    """Rewrite every attention pattern of ``module``; return how many."""
    count = 0
    while True:
        # Rescan after each rewrite: a rewrite erases ops another match may hold.
        for op in dnn_ops(module):
            match = match_attention(builders.read(op)) if op.name == "dnn.matmul" else None
            if match is not None:
                rewrite(match)
                count += 1
                break
        else:
            return count


@register
@dataclass
class DnnRecognizeSdpa(DnncPass):
    NAME = "dnn-recognize-sdpa"

    def run(self, module):
        recognize(module)

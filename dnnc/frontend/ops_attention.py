"""cudnn-frontend's scaled dot-product attention on a ``pygraph``.

``sdpa(q, k, v, is_inference=, attn_scale=, ...)`` returns (O, Stats), Stats
None unless statistics are generated (``generate_stats=True``, or
``is_inference=False`` in the older spelling); ``sdpa_backward`` returns
(dQ, dK, dV). Both lower to dnnc's ``sdpa`` / ``sdpa_backward``.

Masks map as cuDNN defines them: ``use_causal_mask`` (diagonal top-left),
``use_causal_mask_bottom_right``, ``sliding_window_length``, or the band
form ``diagonal_alignment`` + ``diagonal_band_right_bound=0`` (causal) +
``diagonal_band_left_bound=W`` (a window of W); ``use_padding_mask`` with
``seq_len_q`` / ``seq_len_kv``; a paged KV cache with
``paged_attention_k_table`` / ``paged_attention_v_table`` (int32
``[B, 1, pages, 1]``) and ``paged_attention_max_seq_len_kv``, K and V then
``[pages, H_kv, page_size, D]`` caches (forward only, as in cuDNN).
``attn_scale`` is a float or a pass-by-value tensor (compiled in). Ragged
(packed, THD) q, k, v, o, dO, dQ, dK and dV are tensors with
``set_ragged_offset`` (int32 offsets), taken with the padding mask; the
backward's ``max_total_seq_len_q`` / ``_kv`` (cuDNN's bounds on the packed
rows, for its workspace) are accepted and not needed. ``dBias`` (a tensor
the caller made) receives the bias's gradient. Options dnnc does not
implement (dropout, ALiBi, block masks, score modifiers, sink tokens, other
band bounds) raise ``cudnnGraphNotSupportedError`` naming the option.
"""

from dnnc.frontend import enums
from dnnc.frontend.enums import attention_implementation, data_type, diagonal_alignment
from dnnc.frontend.errors import InvalidGraphError
from dnnc.frontend.lowering import unsupported
from dnnc.frontend.ops_pointwise import check_pointwise_compute
from dnnc.frontend.tensor import tensor as Tensor


def _refuse(op, **options):
    """Raise for the first option given that dnnc does not implement."""
    for key, value in options.items():
        if value is not None and value is not False:
            raise unsupported(op, f"{key} is not supported by dnnc")


def _same_kv_heads(op, k, v):
    """cuDNN lets k and v have different head counts (each dividing q's);
    dnnc's sdpa takes one count for both."""
    if len(k.dim) == 4 and len(v.dim) == 4 and k.dim[1] != v.dim[1]:
        err = unsupported(op, f"k with {k.dim[1]} heads and v with {v.dim[1]}: dnnc expects "
                          "k and v to have the same number of heads")
        err.at_validate = True   # an attribute check: cuDNN's validate makes it
        raise err


def _masks(op, use_causal_mask, use_causal_mask_bottom_right, sliding_window_length,
           alignment, left_bound, right_bound):
    """dnnc's (causal, bottom_right, window) from cuDNN's mask arguments."""
    alignment = enums.enum_member(diagonal_alignment, alignment, f"{op} diagonal_alignment")
    causal, bottom_right = bool(use_causal_mask), bool(use_causal_mask_bottom_right)
    window = sliding_window_length
    if right_bound is not None:
        if int(right_bound) != 0:
            raise unsupported(op, f"diagonal_band_right_bound: expected 0 (a causal mask), got "
                              f"{right_bound}")
        if alignment is diagonal_alignment.BOTTOM_RIGHT:
            bottom_right = True
        else:
            causal = True
    if left_bound is not None:
        if right_bound is None and not (causal or bottom_right):
            raise unsupported(op, "diagonal_band_left_bound without a right bound (a band not "
                              "ending at the diagonal) is not supported by dnnc")
        if window is not None and int(window) != int(left_bound):
            raise unsupported(op, f"sliding_window_length {window} and diagonal_band_left_bound "
                              f"{left_bound}: expected one window")
        window = int(left_bound)
    if window is not None and alignment is diagonal_alignment.BOTTOM_RIGHT:
        bottom_right = True
    if causal and bottom_right:
        causal = False   # the bottom-right diagonal was asked for explicitly
    return causal, bottom_right, window


def _check_dbias(graph, bias, dbias):
    """cuDNN's dBias argument: a tensor of this graph that nothing makes
    yet, given with a bias."""
    if not isinstance(dbias, Tensor) or dbias._graph is not graph:
        raise InvalidGraphError(f"sdpa_backward dBias: expected a tensor of this graph, got "
                                f"{type(dbias).__name__}")
    if bias is None:
        raise InvalidGraphError("sdpa_backward dBias: expected a bias with it (dBias is the "
                                "bias's gradient), got bias=None")
    if dbias._producer is not None:
        raise InvalidGraphError(f"sdpa_backward dBias: tensor '{dbias.get_name()}' is already "
                                "made by another op: expected a tensor of its own")


class AttentionOps:
    """The attention methods of ``pygraph``."""

    def sdpa(self, q, k, v, is_inference=None, attn_scale=None, bias=None, block_mask=None,
             use_alibi_mask=False, use_padding_mask=False, seq_len_q=None, seq_len_kv=None,
             use_causal_mask=False, use_causal_mask_bottom_right=False,
             sliding_window_length=None, diagonal_alignment=diagonal_alignment.TOP_LEFT,
             diagonal_band_left_bound=None, diagonal_band_right_bound=None, dropout=None,
             rng_dump=None, paged_attention_k_table=None, paged_attention_v_table=None,
             paged_attention_max_seq_len_kv=None, compute_data_type=data_type.NOT_SET, name="",
             score_mod=None, generate_stats=None,
             implementation=attention_implementation.AUTO, score_max=None, score_sum_exp=None,
             sink_token=None, unfuse_fma=False):
        """Returns (O, Stats); Stats (fp32 log-sum-exp per row) only with statistics."""
        _refuse("sdpa", block_mask=block_mask, use_alibi_mask=use_alibi_mask, dropout=dropout,
                rng_dump=rng_dump,
                score_mod=score_mod, score_max=score_max, score_sum_exp=score_sum_exp,
                sink_token=sink_token, unfuse_fma=unfuse_fma)
        check_pointwise_compute("sdpa", compute_data_type)
        if generate_stats is None:
            generate_stats = is_inference is not None and not is_inference
        masks = _masks("sdpa", use_causal_mask, use_causal_mask_bottom_right,
                       sliding_window_length, diagonal_alignment, diagonal_band_left_bound,
                       diagonal_band_right_bound)

        def lower(ctx, node):
            i = node.inputs
            causal, bottom_right, window = masks
            k_, v_ = ctx.tensor(i["k"], "sdpa k"), ctx.tensor(i["v"], "sdpa v")
            _same_kv_heads("sdpa", k_, v_)
            return ctx.graph.sdpa(
                ctx.tensor(i["q"], "sdpa q"), k_, v_,
                attn_scale=ctx.scalar(attn_scale, "sdpa attn_scale"),
                bias=ctx.tensor(i["bias"], "sdpa bias"), use_causal_mask=causal,
                generate_stats=bool(generate_stats), use_causal_mask_bottom_right=bottom_right,
                sliding_window_length=window, use_padding_mask=bool(use_padding_mask),
                seq_len_q=ctx.tensor(i["seq_len_q"], "sdpa seq_len_q"),
                seq_len_kv=ctx.tensor(i["seq_len_kv"], "sdpa seq_len_kv"),
                paged_attention_k_table=ctx.tensor(i["k_table"], "sdpa paged_attention_k_table"),
                paged_attention_v_table=ctx.tensor(i["v_table"], "sdpa paged_attention_v_table"),
                paged_attention_max_seq_len_kv=None if paged_attention_max_seq_len_kv is None
                else int(paged_attention_max_seq_len_kv))

        return tuple(self._add("sdpa", name,
                               {"q": q, "k": k, "v": v, "bias": bias, "seq_len_q": seq_len_q,
                                "seq_len_kv": seq_len_kv, "k_table": paged_attention_k_table,
                                "v_table": paged_attention_v_table}, lower, n_out=2,
                               present=[True, bool(generate_stats)], labels=["O", "Stats"]))

    def sdpa_backward(self, q, k, v, o, dO, stats, attn_scale=None, bias=None, dBias=None,
                      use_alibi_mask=False, use_padding_mask=False, seq_len_q=None,
                      seq_len_kv=None, max_total_seq_len_q=None, max_total_seq_len_kv=None,
                      use_causal_mask=False, use_causal_mask_bottom_right=False,
                      sliding_window_length=None,
                      diagonal_alignment=diagonal_alignment.TOP_LEFT,
                      diagonal_band_left_bound=None, diagonal_band_right_bound=None,
                      dropout=None, rng_dump=None, use_deterministic_algorithm=False,
                      compute_data_type=data_type.NOT_SET, name="", score_mod=None,
                      score_mod_bprop=None, sink_token=None, dSink_token=None):
        """Returns (dQ, dK, dV). ``use_deterministic_algorithm`` picks
        kernels that sum every gradient in a fixed order (tc-sm90's two
        backward kernels), so every run gives the same bits; without it the
        fused backward adds dQ's parts in whatever order its blocks finish.

        ``dBias``, as in cuDNN, is a tensor the caller made (``tensor``, of
        the bias's dims) that the op writes: the bias's gradient (dnnc's
        ``compute_dbias``), summed over the bias's dims of size 1."""
        if dBias is not None:
            _check_dbias(self, bias, dBias)
        _refuse("sdpa_backward", use_alibi_mask=use_alibi_mask,
                dropout=dropout, rng_dump=rng_dump,
                score_mod=score_mod,
                score_mod_bprop=score_mod_bprop, sink_token=sink_token, dSink_token=dSink_token)
        check_pointwise_compute("sdpa_backward", compute_data_type)
        masks = _masks("sdpa_backward", use_causal_mask, use_causal_mask_bottom_right,
                       sliding_window_length, diagonal_alignment, diagonal_band_left_bound,
                       diagonal_band_right_bound)

        def lower(ctx, node):
            i = node.inputs
            causal, bottom_right, window = masks
            k_, v_ = ctx.tensor(i["k"], "sdpa_backward k"), ctx.tensor(i["v"], "sdpa_backward v")
            _same_kv_heads("sdpa_backward", k_, v_)
            return ctx.graph.sdpa_backward(
                ctx.tensor(i["q"], "sdpa_backward q"), k_, v_,
                ctx.tensor(i["o"], "sdpa_backward o"),
                ctx.tensor(i["dO"], "sdpa_backward dO"),
                ctx.tensor(i["stats"], "sdpa_backward stats"),
                attn_scale=ctx.scalar(attn_scale, "sdpa_backward attn_scale"),
                bias=ctx.tensor(i["bias"], "sdpa_backward bias"), use_causal_mask=causal,
                use_causal_mask_bottom_right=bottom_right, sliding_window_length=window,
                use_padding_mask=bool(use_padding_mask),
                seq_len_q=ctx.tensor(i["seq_len_q"], "sdpa_backward seq_len_q"),
                seq_len_kv=ctx.tensor(i["seq_len_kv"], "sdpa_backward seq_len_kv"),
                use_deterministic_algorithm=bool(use_deterministic_algorithm),
                compute_dbias=dBias is not None)

        grads = self._add("sdpa_backward", name,
                          {"q": q, "k": k, "v": v, "o": o, "dO": dO, "stats": stats,
                           "bias": bias, "seq_len_q": seq_len_q, "seq_len_kv": seq_len_kv},
                          lower, n_out=3, labels=["dQ", "dK", "dV"])
        if dBias is not None:
            # The caller's tensor becomes the op's fourth output (its dims,
            # type and strides are checked and applied as an output's).
            node = grads[0]._producer[0]
            node.outputs.append(dBias)
            dBias._producer = (node, 3)
        return tuple(grads)

    def sdpa_fp8(self, q, k, v, *args, **kwargs):
        raise unsupported("sdpa_fp8", "fp8 attention with descale/scale tensors is not "
                          "supported by dnnc")

    def sdpa_fp8_backward(self, *args, **kwargs):
        raise unsupported("sdpa_fp8_backward", "fp8 attention is not supported by dnnc")

    def sdpa_mxfp8(self, *args, **kwargs):
        raise unsupported("sdpa_mxfp8", "mxfp8 attention is not supported by dnnc")

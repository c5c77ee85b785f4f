"""The arguments of ``Graph.sdpa`` and ``sdpa_backward`` that take more than
passing on, checked and turned into the op's operands and attributes, as
cudnn-frontend names them: the masks (``use_causal_mask``,
``use_causal_mask_bottom_right``, ``sliding_window_length``), the padding
mask's lengths and a paged KV cache's page tables. Errors are GraphError,
naming the argument and what was expected."""

from dnnc.dialect.types import data_type
from dnnc.errors import GraphError


def mask_attrs(causal, bottom_right, window):
    """The sdpa attributes of cudnn-frontend's mask arguments."""
    if causal and bottom_right:
        raise GraphError("sdpa: expected one of use_causal_mask and "
                         "use_causal_mask_bottom_right, got both")
    if window is not None and (not isinstance(window, int) or window < 1):
        raise GraphError(f"sdpa: sliding_window_length: expected a positive integer, got "
                         f"{window!r}")
    return {"causal": bool(causal or bottom_right or window),
            "diagonal": "bottom_right" if bottom_right else "top_left",
            "window": int(window or 0)}


def page_tables(k, k_table, v_table, max_seq_len_kv, padding):
    """The sdpa operands and attribute of cudnn-frontend's paged-attention
    arguments: ({} and {}) without them."""
    if k_table is None and v_table is None:
        if max_seq_len_kv is not None:
            raise GraphError("sdpa: paged_attention_max_seq_len_kv: expected it only with "
                             "paged_attention_k_table and paged_attention_v_table, got "
                             f"{max_seq_len_kv!r} without them")
        return {}, {}
    for name, table in (("paged_attention_k_table", k_table),
                        ("paged_attention_v_table", v_table)):
        if table is None:
            raise GraphError(f"sdpa: {name}: expected an int32 tensor (B, 1, pages_per_seq, "
                             "1) with the other page table, got None")
        if table.data_type is not data_type.INT32:
            got = table.data_type.value if table.data_type else "a tensor of no set data type"
            raise GraphError(f"sdpa: {name}: expected an int32 tensor, got {got}")
        if len(table.dim) != 4:
            raise GraphError(f"sdpa: {name}: expected rank 4 (B, 1, pages_per_seq, 1), got "
                             f"shape {tuple(table.dim)}")
    if not padding:
        raise GraphError("sdpa: paged_attention_k_table: expected use_padding_mask=True with "
                         "seq_len_kv (cuDNN's paged attention needs it), got "
                         "use_padding_mask=False")
    if len(k.dim) != 4:
        raise GraphError(f"sdpa: k: expected a paged cache (num_pages, H_kv, page_size, D), "
                         f"got shape {tuple(k.dim)}")
    room = k_table.dim[2] * k.dim[2]
    if max_seq_len_kv is None:
        max_seq_len_kv = room
    if not isinstance(max_seq_len_kv, int) or not 1 <= max_seq_len_kv <= room:
        raise GraphError(f"sdpa: paged_attention_max_seq_len_kv: expected an integer in 1.."
                         f"{room} (pages_per_seq {k_table.dim[2]} x page_size {k.dim[2]}), "
                         f"got {max_seq_len_kv!r}")
    return ({"page_table_k": k_table, "page_table_v": v_table},
            {"max_seq_len_kv": max_seq_len_kv})


def lengths(padding, seq_len_q, seq_len_kv):
    """The sdpa operands of cudnn-frontend's padding-mask arguments."""
    if not padding and (seq_len_q is not None or seq_len_kv is not None):
        raise GraphError("sdpa: seq_len_q and seq_len_kv: expected use_padding_mask=True "
                         "with them, got use_padding_mask=False")
    return {"seq_len_q": seq_len_q, "seq_len_kv": seq_len_kv}

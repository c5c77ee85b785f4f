"""The arguments of ``Graph.sdpa`` and ``sdpa_backward`` that take more than
passing on, checked and turned into the op's operands and attributes, as
cudnn-frontend names them: the masks (``use_causal_mask``,
``use_causal_mask_bottom_right``, ``sliding_window_length``), the padding
mask's lengths and a paged KV cache's page tables; and the ragged offsets
of its tensors (``Tensor.set_ragged_offset``), which become its ragged_*
operands and ragged_strides. Errors are GraphError, naming the argument
and what was expected."""

from dnnc.dialect import opdef as _opdef
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


# The tensors of sdpa and sdpa_backward that may be ragged, in the order of
# the op's ragged_* operands, and where each is: an operand, or a result.
_RAGGED = {"sdpa": (("q", "operand"), ("k", "operand"), ("v", "operand"),
                    ("o", "result")),
           "sdpa_backward": (("q", "operand"), ("k", "operand"), ("v", "operand"),
                             ("o", "operand"), ("do", "operand"), ("dq", "result"),
                             ("dk", "result"), ("dv", "result"))}


def takes_ragged(op_name):
    """Whether op ``op_name`` takes ragged tensors (sdpa and its backward)."""
    return op_name in _RAGGED


def check_offsets(tensor, offsets):
    """``offsets`` as the ragged offset tensor of ``tensor`` (cudnn-frontend's
    ``set_ragged_offset``): an int32 (B + 1, 1, 1, 1) tensor of the graph."""
    where = f"tensor '{tensor.name}': ragged offset"
    if getattr(offsets, "_graph", None) is not tensor._graph:
        raise GraphError(f"{where}: expected a tensor of this graph, got "
                         f"{type(offsets).__name__}")
    if offsets.data_type is not data_type.INT32:
        got = offsets.data_type.value if offsets.data_type else "a tensor of no set data type"
        raise GraphError(f"{where} '{offsets.name}': expected an int32 tensor, got {got}")
    if len(tensor.dim) != 4:
        raise GraphError(f"{where}: expected a rank-4 tensor (B, H, S, D) to be ragged, got "
                         f"shape {tuple(tensor.dim)}")
    want = [tensor.dim[0] + 1, 1, 1, 1]
    if list(offsets.dim) != want:
        raise GraphError(f"{where} '{offsets.name}': expected shape {tuple(want)} (B + 1 "
                         f"element offsets), got {tuple(offsets.dim)}")


def sequence_stride(tensor):
    """The stride of a ragged ``tensor``'s sequence dim: its packed rows'
    (dnnc/dialect/ops_attention.py). The strides must merge the batch dim
    into the sequence dim (stride_b = S x stride_s) and keep each row's
    heads and columns within stride_s elements."""
    (b, h, s, d), (sb, sh, ss, sd) = tensor.dim, tensor.get_stride()
    where = f"tensor '{tensor.name}' (ragged)"
    if (h - 1) * sh + (d - 1) * sd >= ss:
        raise GraphError(f"{where} stride: expected the sequence dim's stride to be the "
                         f"largest of H, S and D (a packed [T, H, D] layout, each row's "
                         f"{h} heads x {d} columns within it), got strides "
                         f"{[sb, sh, ss, sd]} for dims {[b, h, s, d]}")
    if b > 1 and sb != s * ss:
        raise GraphError(f"{where} stride 0: expected S x stride_s = {s * ss} (the batch "
                         f"dim merged into the packed rows), got {sb}")
    return int(ss)


def ragged(node, final=True):
    """Set sdpa (or sdpa_backward) ``node``'s ragged_* operands and its
    ragged_strides attribute from the ragged offsets of its tensors; raise
    GraphError for a ragged tensor without padding or with a paged k and v.
    Before the ``final`` call (when the node becomes IR) a result's strides
    may still change: a wrong one is not an error yet."""
    names = {name for name, _ in _RAGGED[node.opdef.name]}
    for key, t in list(node.operands.items()) + list(node.results.items()):
        if key in names or key.startswith("ragged_") or isinstance(t, list) or t is None:
            continue
        if getattr(t, "ragged_offset", None) is not None:
            raise GraphError(f"{node.opdef.name}: tensor '{t.name}' ({key}) has a ragged "
                             f"offset: expected one only on {', '.join(sorted(names))} (the "
                             "statistics, bias and lengths stay padded), got one")
    tensors = []
    for name, kind in _RAGGED[node.opdef.name]:
        t = node.operands.get(name) if kind == "operand" else node.results.get(name)
        tensors.append((name, t, getattr(t, "ragged_offset", None) if t is not None else None))
    given = [(name, t) for name, t, off in tensors if off is not None]
    if given and not node.attrs.get("padding", False):
        name, t = given[0]
        raise GraphError(f"{node.opdef.name}: tensor '{t.name}' ({name}) has a ragged offset: "
                         f"expected use_padding_mask=True with seq_len_q and seq_len_kv (the "
                         f"packed sequences' lengths), got use_padding_mask=False")
    if given and node.operands.get("page_table_k") is not None:
        raise GraphError(f"{node.opdef.name}: tensor '{given[0][1].name}' has a ragged offset: "
                         "expected no ragged offsets with a paged KV cache, got both")
    strides = []
    for name, t, off in tensors:
        if off is None:
            strides.append(0)
            continue
        try:
            strides.append(sequence_stride(t))
        except GraphError:
            if final or t.producer is None:
                raise
            strides.append(1)  # set_stride may still come
    for name, _, off in tensors:
        node.operands[f"ragged_{name}"] = off
    node.attrs["ragged_strides"] = tuple(strides) if given else ()


def check_operand(opdef, key, t):
    """Refuse a ragged tensor ``t`` as operand ``key`` of an op that does
    not take ragged tensors."""
    if t is not None and getattr(t, "ragged_offset", None) is not None and \
            not takes_ragged(opdef.name):
        raise GraphError(f"'{opdef.mlir_name}' operand '{key}': tensor '{t.name}' is ragged: "
                         "expected a ragged offset only on the tensors of sdpa and "
                         "sdpa_backward")


def _users(graph, t):
    """(node, "produced by" or "read by") of each node of ``graph`` that
    makes or reads tensor ``t``."""
    out = [(t.producer[0], "produced by")] if t.producer is not None else []
    for node in graph._nodes:
        for value in node.operands.values():
            if t in (value if isinstance(value, list) else [value]):
                out.append((node, "read by"))
                break
    return out


def _check_node(graph, node):
    """Check ``node``'s operands and attributes again (after a change)."""
    infos = {key: ([graph._info(t) for t in v] if isinstance(v, list) else
                   (graph._info(v) if v is not None else None))
             for key, v in node.operands.items()}
    _opdef.infer(node.opdef, infos, dict(node.attrs))


def set_ragged_offset(tensor, offsets):
    """Tensor.set_ragged_offset: check ``offsets``, and the ops that make or
    read ``tensor`` (attention ops, which take it now), or leave all as
    they were and raise."""
    check_offsets(tensor, offsets)
    graph = tensor._graph
    users = _users(graph, tensor)
    for node, role in users:
        if not takes_ragged(node.opdef.name):
            raise GraphError(f"tensor '{tensor.name}': a ragged offset is taken by sdpa and "
                             f"sdpa_backward only, got the tensor {role} "
                             f"'{node.opdef.mlir_name}'")
    tensor.ragged_offset = offsets
    try:
        for node, _ in users:
            ragged(node, final=False)
            _check_node(graph, node)
    except Exception:
        tensor.ragged_offset = None
        for node, _ in users:
            ragged(node, final=False)
        raise


def take_ragged(graph, results):
    """Take the ragged offsets of the tensors of the attention node that
    made ``results`` (returned) now, and again when it becomes IR (an
    output's strides may be set later); a refused node leaves the graph."""
    node = results[0].producer[0]
    try:
        ragged(node, final=False)
        _check_node(graph, node)
    except Exception:
        graph._nodes.remove(node)
        raise
    node.finish = lambda: ragged(node)
    return results

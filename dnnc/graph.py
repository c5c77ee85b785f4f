"""``dnnc.Graph``: build a dnn graph the way cudnn-frontend's Python graph does.

    g = dnnc.Graph(io_data_type=dnnc.data_type.BFLOAT16)
    x = g.tensor(name="x", dim=[8, 64, 56, 56], stride=[200704, 1, 3584, 64])
    w = g.tensor(name="w", dim=[64, 64, 3, 3], stride=[576, 1, 192, 64])
    y = g.relu(g.conv_fprop(x, w, padding=[1, 1]))
    y.set_output(True)
    print(g.to_mlir())

Dims are logical (N, C, [D,] H, W); strides give the physical layout, so
channels-last is a stride pattern. Every op method checks its operands at once
and raises a typed error naming the op, operand and dimension.

Element types follow cuDNN: an output tensor takes the type it was given with
``set_data_type``, else the graph's ``io_data_type``, else the type of its op's
first input; a virtual (non-output) tensor takes ``intermediate_data_type``
(f32 by default). Ops with a fixed result type (comparisons give i1, statistics
are f32) keep it. A convolution or matmul multiplies in its ``compute_data_type``,
else the graph's, else as dnnc/compute_types.py says (f32 convolutions: tf32).
"""

import json
import math

from dnnc import compute_types
from dnnc.dialect import opdef as _opdef
from dnnc.dialect.types import as_data_type, data_type
from dnnc.errors import GraphError, UnsupportedError, VerificationError
from dnnc.graph_attention import lengths as _lengths, mask_attrs as _mask_attrs
from dnnc.graph_attention import page_tables as _page_tables
from dnnc import graph_attention as _attention


_FLOAT = data_type.FLOAT


def contiguous_strides(dim):
    """Row-major strides of a logical shape."""
    strides, step = [], 1
    for d in reversed(dim):
        strides.append(step)
        step *= max(int(d), 1)
    return list(reversed(strides))


class Tensor:
    """A tensor of a Graph: a graph input, or the result of an op."""

    def __init__(self, graph, name, dim, stride=None, data_type=None, producer=None):
        self._graph = graph
        self.name = name
        self.dim = [int(d) for d in dim]
        self.stride = list(stride) if stride is not None else None
        self.data_type = as_data_type(data_type) if data_type is not None else None
        self.producer = producer  # (Node, result name) or None for a graph input
        self.is_output = False
        self.ragged_offset = None  # a packed (THD) tensor's offsets: set_ragged_offset
        self.is_by_value = False   # a runtime scalar (Graph.scalar): a float per call

    # cudnn-frontend style setters, chainable.
    def set_output(self, is_output=True):
        """Mark this tensor as a graph output (or undo it)."""
        if is_output and not self.is_output:
            self._graph._outputs.append(self)
        elif not is_output and self.is_output:
            self._graph._outputs.remove(self)
        self.is_output = bool(is_output)
        return self

    def set_data_type(self, dt):
        """Fix this tensor's element type."""
        self.data_type = as_data_type(dt)
        if not self.data_type.is_storage:
            raise GraphError(f"tensor '{self.name}': expected a storage type, got {dt}")
        return self

    def set_stride(self, stride):
        """Physical strides of an output tensor (in elements)."""
        _check_stride(self.name, self.dim, stride)
        self.stride = [int(s) for s in stride]
        return self

    def set_name(self, name):
        self.name = str(name)
        return self

    def set_ragged_offset(self, offsets):
        """Make this tensor ragged (packed, THD) for sdpa: ``offsets`` (int32, B + 1
        x 1 x 1 x 1) holds where each batch entry starts (graph_attention.py)."""
        _attention.set_ragged_offset(self, offsets)
        return self

    def get_ragged_offset(self):
        return self.ragged_offset

    def get_dim(self):
        return list(self.dim)

    def get_stride(self):
        return list(self.stride) if self.stride is not None else contiguous_strides(self.dim)

    def get_data_type(self):
        return self._graph._resolve_dtype(self)

    @property
    def is_virtual(self):
        return self.producer is not None and not self.is_output

    def __repr__(self):
        return f"Tensor(name={self.name!r}, dim={self.dim}, data_type={self.data_type})"


class Node:
    """One op of a Graph."""

    def __init__(self, opdef, operands, attrs, name):
        self.opdef = opdef
        self.operands = operands  # operand name -> Tensor | None | [Tensor]
        self.attrs = attrs
        self.name = name
        self.explicit_name = False  # kept in the IR only when the user gave it
        self.results = {}  # result name -> Tensor
        self.fixed_dtypes = {}  # result name -> data_type the op fixes
        self.finish = None  # run as it becomes IR (an sdpa's ragged strides)


def _check_stride(name, dim, stride):
    """One stride per dim, none negative: the layout rule of every path
    (dnnc_runtime/layout.py), as far as it is known when strides are given.
    Whether a tensor is an output, whose elements must not share an address,
    is known when the graph becomes IR (graph_mlir.py checks it there)."""
    if stride is None:
        return
    from dnnc_runtime import layout  # the runtime's package: loaded when a stride is given

    wrong = layout.problem(dim, stride, output=False)
    if wrong:
        raise GraphError(f"tensor '{name}': {wrong}")


class Graph:
    """A dnn graph under construction; see the module docstring."""

    def __init__(self, name="main", io_data_type=None, intermediate_data_type=data_type.FLOAT,
                 compute_data_type=None):
        self.name = name
        self.io_data_type = as_data_type(io_data_type) if io_data_type is not None else None
        self.intermediate_data_type = as_data_type(intermediate_data_type)
        # None: not asked, each op's default (dnnc/compute_types.py).
        self.compute_data_type = compute_data_type and as_data_type(compute_data_type)
        self._inputs = []
        self._nodes = []
        self._outputs = []
        self._names = set()

    # ------------------------------------------------------------------ tensors

    def tensor(self, name=None, dim=None, stride=None, data_type=None, ragged_offset=None):
        """A graph input. ``dim`` is logical; ``stride`` defaults to row-major;
        ``ragged_offset`` makes it ragged (``Tensor.set_ragged_offset``)."""
        if dim is None:
            raise GraphError("tensor(): expected dim, got none")
        name = name or f"input{len(self._inputs)}"
        for i, d in enumerate(dim):
            if int(d) < 0:
                raise GraphError(f"tensor '{name}' dim {i}: expected >= 0, got {d}")
        dt = data_type if data_type is not None else self.io_data_type
        if dt is None:
            raise GraphError(f"tensor '{name}': expected a data_type (or a graph io_data_type), "
                             "got none")
        dt = as_data_type(dt)
        if not dt.is_storage:
            raise GraphError(f"tensor '{name}': expected a storage type, got {dt}")
        _check_stride(name, dim, stride)
        t = Tensor(self, self._unique(name), dim, stride, dt)
        self._inputs.append(t)
        if ragged_offset is not None:
            t.set_ragged_offset(ragged_offset)
        return t

    def scalar(self, name=None, data_type=data_type.FLOAT):
        """A runtime scalar input: one f32 value given with each call (a
        Python float), passed to the kernels that read it as a kernel
        argument, so that one compiled executable serves every value (an
        epsilon, a scale). It is a rank-0 tensor of the graph, usable
        wherever a ``constant`` is (a pointwise operand, broadcast) and as
        the ``epsilon`` of layernorm and rmsnorm. Only FLOAT is supported."""
        name = name or f"input{len(self._inputs)}"
        dt = as_data_type(data_type)
        if dt is not _FLOAT:
            raise UnsupportedError(f"scalar '{name}': expected data_type FLOAT (runtime scalars "
                                   f"are f32 kernel arguments), got {dt}")
        t = Tensor(self, self._unique(name), [], [], dt)
        t.is_by_value = True
        self._inputs.append(t)
        return t

    def tensor_like(self, array, name=None):
        """A graph input with the shape, strides and dtype of a NumPy array or
        a torch tensor."""
        shape = list(array.shape)
        if hasattr(array, "stride") and callable(array.stride):
            stride = list(array.stride())
        else:
            stride = [s // array.itemsize for s in array.strides]
        return self.tensor(name=name, dim=shape, stride=stride, data_type=array.dtype)

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def nodes(self):
        return list(self._nodes)

    def unused_inputs(self):
        """The inputs no op reads (``compile`` warns about each:
        ``dnnc.graph_text.UnusedInputWarning``)."""
        from dnnc import graph_text

        return graph_text.unused_inputs(self)

    def __repr__(self):
        """Types, inputs (dims, strides, types), ops (operands, the attributes
        given, results), outputs, and the inputs no op reads."""
        from dnnc import graph_text

        return graph_text.describe(self)

    def _unique(self, name):
        if name in self._names:
            raise GraphError(f"tensor name '{name}' is used twice")
        self._names.add(name)
        return name

    # ------------------------------------------------------------------ op plumbing

    def _op(self, op_name, operands, attrs=None, name=None, declared=None, dtype=None):
        """Add a node; return its result tensors in the OpDef's result order
        (None for absent optional results)."""
        d = _opdef.get(op_name)
        for key, value in operands.items():
            for t in value if isinstance(value, list) else [value]:
                if t is not None and (not isinstance(t, Tensor) or t._graph is not self):
                    raise GraphError(f"'{d.mlir_name}' operand '{key}': expected a tensor of "
                                     f"this graph, got {type(t).__name__}")
                _attention.check_operand(d, key, t)
        infos = {key: ([self._info(t) for t in v] if isinstance(v, list) else
                       (self._info(v) if v is not None else None))
                 for key, v in operands.items()}
        declared_infos = {k: _opdef.TensorInfo(v) for k, v in (declared or {}).items()}
        results, full_attrs = _opdef.infer(d, infos, dict(attrs or {}), declared_infos)
        node_name = name or f"{op_name}{len(self._nodes)}"
        node = Node(d, dict(operands), full_attrs, node_name)
        node.explicit_name = name is not None
        outs = []
        for r in d.results:
            info = results.get(r.name)
            if info is None:
                outs.append(None)
                continue
            t = Tensor(self, f"{node_name}.{r.name}", info.shape, producer=(node, r.name))
            if info.dtype is not None:
                node.fixed_dtypes[r.name] = info.dtype
                t.data_type = info.dtype
            elif dtype is not None:
                t.data_type = as_data_type(dtype)
            node.results[r.name] = t
            outs.append(t)
        self._nodes.append(node)
        return outs

    def _info(self, t):
        # A tensor whose type the graph has not fixed yet (data_type None) is a float.
        return _opdef.TensorInfo(t.dim, t.data_type)

    def _resolve_dtype(self, t):
        if t.producer is None:
            return t.data_type
        node, result = t.producer
        if result in node.fixed_dtypes:
            return node.fixed_dtypes[result]
        if node.opdef.dtype_from:
            # Data movement keeps its input's type, whatever the tensor's role.
            return self._resolve_dtype(node.operands[node.opdef.dtype_from])
        if t.data_type is not None:
            return t.data_type
        if not t.is_output:
            return self.intermediate_data_type
        if self.io_data_type is not None:
            return self.io_data_type
        for v in node.operands.values():
            for x in v if isinstance(v, list) else [v]:
                if x is not None:
                    dt = self._resolve_dtype(x)
                    if dt.is_float:
                        return dt
        return data_type.FLOAT

    def _compute(self, compute_data_type, op="matmul", operands=(), groups=1):
        """``op``'s compute type: asked on it, on the graph, else compute_types'."""
        asked = as_data_type(compute_data_type) if compute_data_type is not None else \
            self.compute_data_type
        if asked not in (None, data_type.FLOAT, data_type.TF32, data_type.INT32):
            raise GraphError(f"compute_data_type: expected float, tf32 or int32, got {asked}")
        types = [self._resolve_dtype(t) for t in operands if isinstance(t, Tensor)]
        return compute_types.resolve(op, asked, types, groups).mlir

    # ------------------------------------------------------------------ convolution

    def _conv_attrs(self, op, operands, padding, stride, dilation, pre_padding, post_padding,
                    conv_mode, compute_data_type):
        nd = len(operands[0].dim) - 2
        # operands: (x, w), (dy, w, dx dims) or (x, dy, dw dims): the groups.
        x = operands[2] if op == "conv_dgrad" else operands[0].dim
        groups = x[1] // max((operands[2] if op == "conv_wgrad" else operands[1].dim)[1], 1)
        pad = _spatial("padding", padding, nd, 0)
        return {
            "pre_padding": _spatial("pre_padding", pre_padding, nd, None) or pad,
            "post_padding": _spatial("post_padding", post_padding, nd, None) or pad,
            "stride": _spatial("stride", stride, nd, 1),
            "dilation": _spatial("dilation", dilation, nd, 1),
            "mode": conv_mode,
            "compute_type": self._compute(compute_data_type, op, operands, groups),
        }

    def conv_fprop(self, image, weight, padding=None, stride=None, dilation=None,
                   pre_padding=None, post_padding=None, conv_mode="cross_correlation",
                   compute_data_type=None, name=None):
        """Convolution forward: y = image (*) weight (compute types: compute_types.py)."""
        attrs = self._conv_attrs("conv_fprop", (image, weight), padding, stride, dilation,
                                 pre_padding, post_padding, conv_mode, compute_data_type)
        return self._op("conv_fprop", {"x": image, "w": weight}, attrs, name)[0]

    def conv_dgrad(self, loss, filter, dx_dim, padding=None, stride=None, dilation=None,
                   pre_padding=None, post_padding=None, conv_mode="cross_correlation",
                   compute_data_type=None, name=None):
        """Data gradient of a convolution; ``dx_dim`` is the shape of the image."""
        attrs = self._conv_attrs("conv_dgrad", (loss, filter, dx_dim), padding, stride, dilation,
                                 pre_padding, post_padding, conv_mode, compute_data_type)
        return self._op("conv_dgrad", {"dy": loss, "w": filter}, attrs, name,
                        declared={"dx": dx_dim})[0]

    def conv_wgrad(self, image, loss, dw_dim, padding=None, stride=None, dilation=None,
                   pre_padding=None, post_padding=None, conv_mode="cross_correlation",
                   compute_data_type=None, name=None):
        """Filter gradient of a convolution; ``dw_dim`` is the shape of the filter."""
        attrs = self._conv_attrs("conv_wgrad", (image, loss, dw_dim), padding, stride, dilation,
                                 pre_padding, post_padding, conv_mode, compute_data_type)
        return self._op("conv_wgrad", {"dy": loss, "x": image}, attrs, name,
                        declared={"dw": dw_dim})[0]

    # ------------------------------------------------------------------ matmul, attention

    def matmul(self, A, B, compute_data_type=None, name=None):
        """C = A @ B with broadcast batch dims (compute types: compute_types.py)."""
        return self._op("matmul", {"a": A, "b": B},
                        {"compute_type": self._compute(compute_data_type, "matmul", (A, B))},
                        name)[0]

    def matmul_block_scaled(self, A, B, A_scale, B_scale, compute_data_type=None, name=None):
        """C = A @ B of fp8 operands (e4m3 / e5m2, any pairing) with block
        scales, as DeepSeek-V3 quantizes: ``A_scale`` (f32, M x ceil(K/128))
        scales each row of A over each 128-wide K block ("1 x 128"),
        ``B_scale`` (f32, ceil(K/128) x ceil(N/128)) each 128 x 128 block of
        B, so C[m, n] = sum over K blocks kb of A_scale[m, kb] *
        B_scale[kb, n // 128] * sum_{k in kb} A[m, k] B[k, n]. The last K
        block is partial when K is not a multiple of 128; its scales still
        apply. Accumulates in f32 (the only compute type); C's type is the
        output's (bf16, f16, f32 or fp8)."""
        return self._op("matmul_block_scaled",
                        {"a": A, "b": B, "a_scale": A_scale, "b_scale": B_scale},
                        {"compute_type": self._compute(compute_data_type, "matmul", (A, B))},
                        name)[0]

    def sdpa(self, q, k, v, attn_scale=None, bias=None, use_causal_mask=False,
             generate_stats=False, use_causal_mask_bottom_right=False,
             sliding_window_length=None, use_padding_mask=False, seq_len_q=None,
             seq_len_kv=None, paged_attention_k_table=None, paged_attention_v_table=None,
             paged_attention_max_seq_len_kv=None, name=None):
        """Scaled dot-product attention; returns (O, Stats) with Stats None unless
        ``generate_stats``. ``attn_scale`` defaults to 1/sqrt(head dim).
        ``use_causal_mask`` masks the columns right of the top-left aligned
        diagonal (row i sees columns up to i), ``use_causal_mask_bottom_right``
        those right of the bottom-right aligned one (up to i + Skv - Sq);
        ``sliding_window_length`` W also masks those W or more left of it
        (causal implied). ``use_padding_mask`` takes each batch entry's
        lengths from ``seq_len_q`` and ``seq_len_kv`` (int32, B x 1 x 1 x 1):
        the rows and columns past them are padding (O = 0 there).

        A paged KV cache (cuDNN's paged attention, inference only): K and V
        are caches (num_pages, H_kv, page_size, D), ``paged_attention_k_table``
        and ``paged_attention_v_table`` (int32, B x 1 x pages_per_seq x 1)
        name each sequence's pages, position j of sequence b being row
        j % page_size of page table[b, 0, j // page_size, 0];
        ``paged_attention_max_seq_len_kv`` is Skv (default pages_per_seq x
        page_size). It needs ``use_padding_mask``; only positions below
        seq_len_kv are read, and their table entries must be valid pages.
        Ragged (packed) q, k, v, o: ``Tensor.set_ragged_offset``."""
        scale = attn_scale if attn_scale is not None else 1.0 / math.sqrt(q.dim[-1])
        scale = _number("sdpa", "attn_scale", scale)
        tables, paged = _page_tables(k, paged_attention_k_table, paged_attention_v_table,
                                     paged_attention_max_seq_len_kv, use_padding_mask)
        o, stats = self._op("sdpa", {"q": q, "k": k, "v": v, "bias": bias,
                                     **_lengths(use_padding_mask, seq_len_q, seq_len_kv),
                                     **tables},
                            dict(_mask_attrs(use_causal_mask, use_causal_mask_bottom_right,
                                             sliding_window_length),
                                 padding=bool(use_padding_mask),
                                 scale=float(scale), generate_stats=bool(generate_stats),
                                 **paged),
                            name)
        return _attention.take_ragged(self, (o, stats))

    def sdpa_backward(self, q, k, v, o, dO, stats, attn_scale=None, bias=None,
                      use_causal_mask=False, use_causal_mask_bottom_right=False,
                      sliding_window_length=None, use_padding_mask=False, seq_len_q=None,
                      seq_len_kv=None, paged_attention_k_table=None,
                      paged_attention_v_table=None, paged_attention_max_seq_len_kv=None,
                      use_deterministic_algorithm=False, compute_dbias=False, name=None):
        """Attention backward; returns (dQ, dK, dV), or (dQ, dK, dV, dBias)
        with ``compute_dbias``. The masks are the
        forward's (``sdpa``). A paged KV cache is forward only, as in cuDNN:
        K and V here are contiguous (B, H_kv, S_kv, D), and the paged_attention
        arguments are refused. ``use_deterministic_algorithm`` asks for
        kernels that sum every gradient in a fixed order, so that two runs
        write the same bits (the default, faster backward adds dQ's parts
        in whatever order its blocks finish).

        ``compute_dbias`` (cuDNN's dBias output) needs ``bias``: dBias has
        the bias's shape and (unless set) type and is the gradient of the scores after
        the scale (the bias is added unscaled), 0 where masked, summed over
        the bias's dims of size 1 (a bias broadcast over B or H gets the
        sum over the batch entries or heads)."""
        for arg, given in (("paged_attention_k_table", paged_attention_k_table),
                           ("paged_attention_v_table", paged_attention_v_table),
                           ("paged_attention_max_seq_len_kv", paged_attention_max_seq_len_kv)):
            if given is not None:
                raise UnsupportedError(f"sdpa_backward: {arg}: expected None (a paged KV "
                                       "cache is forward only, as in cuDNN), got a value")
        if compute_dbias and bias is None:
            raise GraphError("sdpa_backward: compute_dbias: expected a bias tensor (dBias is "
                             "its gradient), got bias=None")
        scale = attn_scale if attn_scale is not None else 1.0 / math.sqrt(q.dim[-1])
        scale = _number("sdpa_backward", "attn_scale", scale)
        grads = _attention.take_ragged(self, tuple(self._op(
            "sdpa_backward",
            {"q": q, "k": k, "v": v, "o": o, "do": dO, "stats": stats, "bias": bias,
             **_lengths(use_padding_mask, seq_len_q, seq_len_kv)},
            dict(_mask_attrs(use_causal_mask, use_causal_mask_bottom_right,
                             sliding_window_length), padding=bool(use_padding_mask),
                 scale=float(scale), deterministic=bool(use_deterministic_algorithm),
                 compute_dbias=bool(compute_dbias)), name)))
        if not compute_dbias:
            return grads[:3]
        if bias.data_type is not None:
            grads[3].data_type = bias.data_type   # until set_data_type says otherwise
        return grads

    # ------------------------------------------------------------------ normalization

    def layernorm(self, input, scale=None, bias=None, epsilon=1e-5, axis=1,
                  norm_forward_phase="inference", name=None):
        """Layer normalization over dims [axis, rank); returns (Y, mean, inv_variance)
        with the statistics None in the inference phase. ``epsilon`` is a
        number, or a runtime scalar (``scalar``) given with each call."""
        eps, attr = _epsilon_operand("layernorm", epsilon)
        return tuple(self._op("layernorm", {"x": input, "scale": scale, "bias": bias,
                                            "epsilon": eps},
                              {"axis": _axis(axis, input), "epsilon": attr,
                               "training": _training(norm_forward_phase)}, name))

    def rmsnorm(self, input, scale=None, bias=None, epsilon=1e-5, axis=1,
                norm_forward_phase="inference", name=None):
        """RMS normalization over dims [axis, rank); returns (Y, inv_rms).
        ``epsilon`` as for ``layernorm``."""
        eps, attr = _epsilon_operand("rmsnorm", epsilon)
        return tuple(self._op("rmsnorm", {"x": input, "scale": scale, "bias": bias,
                                          "epsilon": eps},
                              {"axis": _axis(axis, input), "epsilon": attr,
                               "training": _training(norm_forward_phase)}, name))

    def layernorm_backward(self, grad, input, scale=None, mean=None, inv_variance=None, axis=1,
                           has_bias=True, name=None):
        """Returns (dX, dscale, dbias); dscale None without scale, dbias None
        unless has_bias."""
        return tuple(self._op("layernorm_backward",
                              {"dy": grad, "x": input, "scale": scale, "mean": mean,
                               "inv_variance": inv_variance},
                              {"axis": _axis(axis, input), "has_bias": bool(has_bias)}, name))

    def rmsnorm_backward(self, grad, input, scale=None, inv_rms=None, axis=1, has_bias=False,
                         name=None):
        """Returns (dX, dscale, dbias)."""
        return tuple(self._op("rmsnorm_backward",
                              {"dy": grad, "x": input, "scale": scale, "inv_rms": inv_rms},
                              {"axis": _axis(axis, input), "has_bias": bool(has_bias)}, name))

    def batchnorm(self, input, scale, bias, in_running_mean=None, in_running_var=None,
                  epsilon=1e-5, momentum=0.1, name=None):
        """Training batchnorm; returns (Y, mean, inv_variance, next_running_mean,
        next_running_var), the last two None without running statistics."""
        return tuple(self._op("batchnorm",
                              {"x": input, "scale": scale, "bias": bias,
                               "running_mean": in_running_mean, "running_var": in_running_var},
                              {"epsilon": _number("batchnorm", "epsilon", epsilon),
                               "momentum": _number("batchnorm", "momentum", momentum)}, name))

    def batchnorm_inference(self, input, mean, variance, scale, bias, epsilon=1e-5, name=None):
        """Inference batchnorm with given statistics."""
        return self._op("batchnorm_inference",
                        {"x": input, "scale": scale, "bias": bias, "mean": mean,
                         "variance": variance},
                        {"epsilon": _number("batchnorm_inference", "epsilon", epsilon)}, name)[0]

    def batchnorm_backward(self, grad, input, scale, mean, inv_variance, name=None):
        """Returns (dX, dscale, dbias)."""
        return tuple(self._op("batchnorm_backward",
                              {"dy": grad, "x": input, "scale": scale, "mean": mean,
                               "inv_variance": inv_variance}, {}, name))

    def groupnorm(self, input, groups, scale=None, bias=None, epsilon=1e-5,
                  norm_forward_phase="inference", name=None):
        """Group normalization; returns (Y, mean, inv_variance)."""
        return tuple(self._op("groupnorm", {"x": input, "scale": scale, "bias": bias},
                              {"groups": int(groups),
                               "epsilon": _number("groupnorm", "epsilon", epsilon),
                               "training": _training(norm_forward_phase)}, name))

    def groupnorm_backward(self, grad, input, groups, scale=None, mean=None, inv_variance=None,
                           has_bias=True, name=None):
        """Returns (dX, dscale, dbias)."""
        return tuple(self._op("groupnorm_backward",
                              {"dy": grad, "x": input, "scale": scale, "mean": mean,
                               "inv_variance": inv_variance},
                              {"groups": int(groups), "has_bias": bool(has_bias)}, name))

    def instancenorm(self, input, scale=None, bias=None, epsilon=1e-5,
                     norm_forward_phase="inference", name=None):
        """Instance normalization; returns (Y, mean, inv_variance)."""
        return tuple(self._op("instancenorm", {"x": input, "scale": scale, "bias": bias},
                              {"epsilon": _number("instancenorm", "epsilon", epsilon),
                               "training": _training(norm_forward_phase)}, name))

    def instancenorm_backward(self, grad, input, scale=None, mean=None, inv_variance=None,
                              has_bias=True, name=None):
        """Returns (dX, dscale, dbias)."""
        return tuple(self._op("instancenorm_backward",
                              {"dy": grad, "x": input, "scale": scale, "mean": mean,
                               "inv_variance": inv_variance}, {"has_bias": bool(has_bias)},
                              name))

    # ------------------------------------------------------------------ softmax, reduction, pooling

    def softmax(self, input, axis=-1, name=None):
        return self._op("softmax", {"x": input}, {"axis": _axis(axis, input)}, name)[0]

    def log_softmax(self, input, axis=-1, name=None):
        return self._op("log_softmax", {"x": input}, {"axis": _axis(axis, input)}, name)[0]

    def softmax_backward(self, grad, output, axis=-1, name=None):
        """dX from dY and the forward output Y."""
        return self._op("softmax_backward", {"dy": grad, "y": output},
                        {"axis": _axis(axis, output)}, name)[0]

    def log_softmax_backward(self, grad, output, axis=-1, name=None):
        return self._op("log_softmax_backward", {"dy": grad, "y": output},
                        {"axis": _axis(axis, output)}, name)[0]

    def reduction(self, input, mode, axes, keepdims=True, name=None):
        """Reduce ``input`` over ``axes`` with mode sum, mean, max, min, prod, amax,
        norm1 or norm2."""
        axes = sorted({_axis(a, input) for a in ([axes] if isinstance(axes, int) else axes)})
        return self._op("reduction", {"x": input},
                        {"mode": str(mode), "axes": axes, "keepdims": bool(keepdims)}, name)[0]

    def _pool_attrs(self, input, mode, window, stride, padding, pre_padding, post_padding,
                    count_include_pad):
        nd = len(input.dim) - 2
        window = _spatial("window", window, nd, None)
        if window is None:
            raise GraphError("pooling: expected a window, got none")
        pad = _spatial("padding", padding, nd, 0)
        return {"mode": str(mode), "window": window,
                "stride": _spatial("stride", stride, nd, None) or window,
                "pre_padding": _spatial("pre_padding", pre_padding, nd, None) or pad,
                "post_padding": _spatial("post_padding", post_padding, nd, None) or pad,
                "count_include_pad": bool(count_include_pad)}

    def pooling(self, input, mode, window, stride=None, padding=None, pre_padding=None,
                post_padding=None, count_include_pad=False, name=None):
        """Max or average pooling; ``stride`` defaults to the window."""
        return self._op("pooling", {"x": input},
                        self._pool_attrs(input, mode, window, stride, padding, pre_padding,
                                         post_padding, count_include_pad), name)[0]

    def pooling_backward(self, grad, input, mode, window, stride=None, padding=None,
                         pre_padding=None, post_padding=None, count_include_pad=False,
                         name=None):
        """Gradient of pooling with respect to its input."""
        return self._op("pooling_backward", {"dy": grad, "x": input},
                        self._pool_attrs(input, mode, window, stride, padding, pre_padding,
                                         post_padding, count_include_pad), name)[0]

    # ------------------------------------------------------------------ pointwise

    def select(self, cond, a, b, name=None):
        """a where cond else b."""
        return self._op("select", {"cond": cond, "a": a, "b": b}, {}, name)[0]

    def gen_index(self, input, axis, name=None):
        """Each element's position along ``axis`` (shape taken from ``input``)."""
        return self._op("gen_index", {"x": input}, {"axis": _axis(axis, input)}, name)[0]

    def logical_not(self, input, name=None):
        return self._op("logical_not", {"x": input}, {}, name)[0]

    # ------------------------------------------------------------------ tensor ops

    def cast(self, input, data_type, name=None):
        """Convert ``input`` to ``data_type``."""
        dt = as_data_type(data_type)
        (y,) = self._op("cast", {"x": input}, {}, name, dtype=dt)
        return y

    def constant(self, value, data_type=data_type.FLOAT, name=None):
        """A scalar constant, broadcast by the ops that use it."""
        (y,) = self._op("constant", {}, {"value": float(value)}, name, dtype=data_type)
        return y

    def reshape(self, input, dim, name=None):
        """Same elements in row-major logical order, new logical shape."""
        return self._op("reshape", {"x": input}, {}, name, declared={"y": list(dim)})[0]

    def transpose(self, input, permutation, name=None):
        """Permute logical dims: out.dim[i] = input.dim[permutation[i]]."""
        return self._op("transpose", {"x": input}, {"permutation": list(permutation)}, name)[0]

    def slice(self, input, slices=None, start=None, limit=None, step=None, name=None):
        """Slice with Python ``slice`` objects (one per dim, missing dims whole)
        or with explicit start/limit/step lists."""
        rank = len(input.dim)
        if slices is not None:
            slices = list(slices) + [slice(None)] * (rank - len(slices))
            start, limit, step = [], [], []
            for d, s in zip(input.dim, slices):
                a, b, c = s.indices(d)
                if c <= 0:
                    raise GraphError(f"slice: expected positive steps, got {c}")
                start.append(a), limit.append(max(a, b)), step.append(c)
        start = list(start if start is not None else [0] * rank)
        limit = list(limit if limit is not None else input.dim)
        step = list(step if step is not None else [1] * rank)
        return self._op("slice", {"x": input}, {"start": start, "limit": limit, "step": step},
                        name)[0]

    def concat(self, inputs, axis, name=None):
        """Join tensors along ``axis``: a chain of binary ``dnn.concat`` ops."""
        inputs = list(inputs)
        if len(inputs) < 2:
            raise GraphError(f"concat: expected at least 2 tensors, got {len(inputs)}")
        axis = _axis(axis, inputs[0])
        result = inputs[0]
        for i, t in enumerate(inputs[1:]):
            part = name if name is None or i == len(inputs) - 2 else f"{name}.{i}"
            result = self._op("concat", {"a": result, "b": t}, {"axis": axis}, part)[0]
        return result

    # ------------------------------------------------------------------ MLIR and execution
    # Imported where they are used: dnnc.graph_mlir imports MLIR, which
    # building a graph and a JIT cache hit do not need, and the driver is
    # loaded when a graph is compiled.

    def to_mlir(self):
        """The graph as dnn-dialect MLIR text."""
        from dnnc import graph_mlir

        return graph_mlir.to_mlir(self)

    def to_module(self):
        """The graph as a dnn-level ``mlir.ir.Module``, in a new dnnc context
        (what the compiler driver compiles: see ``compiler.GraphLike``)."""
        from dnnc import graph_mlir

        return graph_mlir.to_module(self)

    @staticmethod
    def from_mlir(text):
        """Read a graph back from dnn-dialect MLIR text."""
        from dnnc import graph_mlir

        return graph_mlir.from_mlir(text, Graph)

    def serialize(self):
        """The graph as canonical JSON text, made without MLIR: everything
        ``to_mlir`` reads, in a fixed form. That is the graph's name and data
        types; each input's name, dims, strides and element type (and whether it
        is a runtime scalar); each op in
        order with its name, attributes, operands and result tensors (name,
        dims, strides, element type as resolved now); the outputs in order.
        Operands and outputs refer to tensors by position (``input:0``,
        ``op:3:y``), floats are written exactly (``float.hex``). One graph
        gives the same text in every process, and graphs whose MLIR differs
        give different texts: the JIT cache keys graphs by it."""
        refs = {}
        inputs = []
        for i, t in enumerate(self._inputs):
            refs[id(t)] = f"input:{i}"
            inputs.append(self._tensor_form(t))
        nodes = []
        for j, node in enumerate(self._nodes):
            operands = {key: _operand_form(refs, value, node, key)
                        for key, value in node.operands.items()}
            attrs = {key: _attr_form(node.opdef.attr(key).kind, value)
                     for key, value in node.attrs.items()}
            results = {}
            for r, t in node.results.items():
                refs[id(t)] = f"op:{j}:{r}"
                results[r] = self._tensor_form(t)
            nodes.append({"op": node.opdef.name, "name": node.name,
                          "explicit_name": node.explicit_name, "operands": operands,
                          "attrs": attrs, "results": results})
        form = {
            "name": self.name,
            "io_data_type": _dtype_form(self.io_data_type),
            "intermediate_data_type": _dtype_form(self.intermediate_data_type),
            "compute_data_type": _dtype_form(self.compute_data_type),
            "inputs": inputs,
            "nodes": nodes,
            "outputs": [_ref(refs, t, "output") for t in self._outputs],
        }
        return json.dumps(form, sort_keys=True, separators=(",", ":"), allow_nan=False)

    def _tensor_form(self, t):
        form = {"name": t.name, "dim": [int(d) for d in t.dim],
                "stride": [int(s) for s in t.get_stride()],
                "data_type": _dtype_form(self._resolve_dtype(t))}
        if t.is_by_value:
            form["by_value"] = True
        return form

    def execute_reference(self, inputs):
        """Run the NumPy oracle. ``inputs`` maps input tensors (or their names)
        to arrays; returns a dict output name -> float64 (or bool) array, each
        value rounded to its tensor's element type."""
        from dnnc import interpreter

        outs = interpreter.run_module(self.to_module(), self._ordered_inputs(inputs))
        return {t.name: v for t, v in zip(self._outputs, outs)}

    def compile(self, target="cpu", arch=None, cache=True, mode="heuristic", **options):
        """Compile the graph and return something to call on arrays.

        ``target="cpu"`` runs it with MLIR's ExecutionEngine (``arch`` and
        ``cache`` do not apply). ``target="cuda"`` is the JIT: it compiles for
        ``arch`` (None: the current GPU's, sm_80 for 8.x, sm_90a for 9.0;
        UnsupportedError when there is no GPU) through the on-disk cache
        (``cache=False`` skips it) and returns a ``dnnc_runtime.Executable``.

        ``mode="heuristic"`` takes each kernel's config from the tuning
        database when it has the kernel's problem, else the heuristics' first
        choice. ``mode="autotune"`` (target cuda, on the GPU) first times the
        top configs (``top=4``) of each kernel the database lacks, records
        the fastest, then compiles with them; ``progress=`` gets each step
        (dnnc/tune/tuner.py). ``tuning_db=`` names the database file
        (default $DNNC_TUNING_DB, else ``tuning.json`` in the cache directory;
        ``"off"``: none).
        """
        from dnnc import graph_text

        graph_text.warn_unused(self)
        if target == "cuda":
            from dnnc import jit

            return jit.jit(self, arch=arch, cache=cache, mode=mode, **options)
        from dnnc import compiler

        compiler.check_mode(mode, top=options.pop("top", None),
                            progress=options.pop("progress", None))
        if mode != "heuristic":
            raise UnsupportedError(f"mode '{mode}' times kernels on a GPU: it applies to "
                                   f"target 'cuda', not '{target}'")
        if arch is not None:
            options["arch"] = arch  # Options says which target an arch belongs to
        return compiler.compile_graph(self, target=target, **options)

    def _ordered_inputs(self, inputs):
        by_name = {}
        for key, value in inputs.items():
            by_name[key.name if isinstance(key, Tensor) else str(key)] = value
        ordered = []
        for t in self._inputs:
            if t.name not in by_name:
                raise GraphError(f"input '{t.name}': expected an array, got none")
            ordered.append(by_name.pop(t.name))
        if by_name:
            raise GraphError(f"unknown inputs: {', '.join(sorted(by_name))}; the graph's inputs "
                             f"are {', '.join(t.name for t in self._inputs)}")
        return ordered


def _epsilon_operand(op, epsilon):
    """(the ``epsilon`` operand, the epsilon attribute) of a layernorm or
    rmsnorm: a rank-0 tensor (a runtime scalar) is the operand, and the
    attribute keeps its default; a number is the attribute."""
    if isinstance(epsilon, Tensor):
        return epsilon, 1e-5
    return None, _number(op, "epsilon", epsilon)


def _number(op, what, value):
    """``value`` as the float attribute ``what`` of ``op``. A tensor (a
    runtime scalar) is refused: the op compiles this value in."""
    if isinstance(value, Tensor):
        raise UnsupportedError(f"{op}: {what}: expected a number, got tensor '{value.name}' "
                               f"(a runtime scalar is taken as the epsilon of layernorm and "
                               f"rmsnorm and as a pointwise operand; {op} compiles its {what} "
                               "into the kernels: pass a float)")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise GraphError(f"{op}: {what}: expected a number, got {type(value).__name__}") from None


def _dtype_form(dt):
    return dt.value if dt is not None else None


def _ref(refs, t, where):
    try:
        return refs[id(t)]
    except KeyError:
        raise GraphError(f"{where} '{t.name}': expected a tensor of this graph made before "
                         "its use, got an unknown tensor") from None


def _operand_form(refs, value, node, key):
    where = f"op '{node.name}' operand '{key}'"
    if value is None:
        return None
    if isinstance(value, list):
        return [_ref(refs, t, where) for t in value]
    return _ref(refs, value, where)


def _attr_form(kind, value):
    """An attribute's value as builders.encode_attr reads it, in JSON."""
    if kind == "int":
        return int(value)
    if kind == "ints":
        return [int(v) for v in value]
    if kind == "float":
        return float(value).hex()  # exact, and defined for the infinities
    if kind == "bool":
        return bool(value)
    return str(value)  # "str", "type"


def _spatial(what, value, nd, default):
    if value is None:
        return [default] * nd if default is not None else None
    if isinstance(value, int):
        return [value] * nd
    value = [int(v) for v in value]
    if len(value) != nd:
        raise VerificationError(f"{what}: expected {nd} values (spatial rank), got {len(value)}")
    return value


def _axis(axis, tensor):
    rank = len(tensor.dim)
    a = int(axis)
    if not -rank <= a < rank:
        raise GraphError(f"axis {axis}: expected in [{-rank}, {rank}) for tensor '{tensor.name}' "
                         f"of rank {rank}, got {axis}")
    return a % rank


def _training(phase):
    phase = str(getattr(phase, "name", phase)).lower()
    if phase not in ("training", "inference"):
        raise GraphError(f"norm_forward_phase: expected 'training' or 'inference', got {phase}")
    return phase == "training"


def _unary(op_name, attr_names):
    def method(self, input, name=None, **kwargs):
        unknown = set(kwargs) - set(attr_names)
        if unknown:
            raise GraphError(f"{op_name}(): unexpected argument {sorted(unknown)[0]!r}; "
                             f"accepted: {', '.join(attr_names) or 'none'}")
        return self._op(op_name, {"x": input}, kwargs, name)[0]

    method.__name__ = op_name
    method.__doc__ = _opdef.get(op_name).doc
    return method


def _binary(op_name):
    def method(self, a, b, name=None):
        return self._op(op_name, {"a": a, "b": b}, {}, name)[0]

    method.__name__ = op_name
    method.__doc__ = _opdef.get(op_name).doc
    return method


def _activation_backward(op_name, attr_names):
    def method(self, loss, input, name=None, **kwargs):
        return self._op(op_name, {"dy": loss, "x": input}, kwargs, name)[0]

    method.__name__ = op_name
    method.__doc__ = _opdef.get(op_name).doc
    return method


def _install_pointwise():
    from dnnc.dialect import ops_pointwise as pw

    for op_name, (attrs, _) in pw.UNARY.items():
        setattr(Graph, op_name, _unary(op_name, [a.name for a in attrs]))
    for op_name in list(pw.BINARY) + list(pw.COMPARE) + list(pw.LOGICAL):
        setattr(Graph, op_name, _binary(op_name))
    for op_name, (attrs, _) in pw.ACTIVATION_BACKWARD.items():
        setattr(Graph, op_name, _activation_backward(op_name, [a.name for a in attrs]))


_install_pointwise()

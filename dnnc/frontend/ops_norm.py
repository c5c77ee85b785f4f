"""cudnn-frontend's normalizations on a ``pygraph``, lowered to dnnc's.

Signatures follow ``python/pygraph/norm.cpp``: ``layernorm(norm_forward_phase,
input, scale, bias, epsilon)`` returns (Y, mean, inv_variance), the two
statistics None in the INFERENCE phase; ``rmsnorm`` returns (Y,
inv_variance); ``batchnorm`` (always training, as in cuDNN) returns (Y,
mean, inv_variance, next_running_mean, next_running_var); the backwards
return (DX, DScale, DBias).

The norms normalize over every dim but the first (layernorm, rmsnorm: a
row per batch entry, ``[batch*seq, hidden, 1, 1]`` in cuDNN's samples) or
per (batch, channel) (instancenorm) or per channel (batchnorm).
``epsilon`` and ``momentum`` are pass-by-value tensors in cuDNN (or Python
floats here). The epsilon of layernorm and rmsnorm, given at ``execute``,
is a runtime scalar (an f32 kernel argument: one plan for every value);
dnnc compiles the others' values into the kernels (see
``lowering.Lowering.scalar_operand`` and ``scalar``).

``batchnorm_inference`` takes the inverse standard deviation, as cuDNN's
does; dnnc's op takes the variance, so it is composed here from pointwise
ops: (x - mean) * inv_variance * scale + bias.

cuDNN's samples give layernorm and rmsnorm x as [rows, hidden, 1, 1]. Those
(every dim after the second 1, the parameters [1, hidden, 1, 1]) are
lowered as the norm of [rows, hidden], reshaped in and out, which dnnc runs
as one row program (simt-reduce) instead of a generic kernel per step; see
``_Rows``.
"""

import math

from dnnc.frontend import enums
from dnnc.frontend.enums import data_type, norm_forward_phase
from dnnc.frontend.errors import InvalidGraphError
from dnnc.frontend.lowering import unsupported
from dnnc.frontend.ops_pointwise import check_pointwise_compute


# cuDNN's names of the outputs (``<op name>::Y``...).
_STATS = ["Y", "MEAN", "INV_VARIANCE"]
_GRADS = ["DX", "DSCALE", "DBIAS"]


def _phase(op, phase):
    phase = enums.enum_member(norm_forward_phase, phase, f"{op} norm_forward_phase")
    if phase is norm_forward_phase.NOT_SET:
        raise InvalidGraphError(f"{op}: norm_forward_phase: expected TRAINING or INFERENCE, "
                                "got NOT_SET")
    return phase.name.lower()


def _no_peers(op, peer_stats):
    if peer_stats:
        raise unsupported(op, "peer_stats (statistics shared across GPUs) are not supported by "
                          "dnnc")


class _Rows:
    """The [rows, hidden] form of a norm over x [rows, hidden, 1, ..., 1]
    (the cuDNN samples' layernorm): ``flat(t)`` reshapes an operand (x-shaped,
    parameter-shaped [1, hidden, 1..] or statistics-shaped [rows, 1, 1..])
    to rank 2, ``back(d, t)`` reshapes a result to the frontend tensor
    ``t``'s rank, first giving it the type ``t`` is to have (a reshape keeps
    its input's type; a statistic, f32 by the op, is cast).

    ``of(ctx, x, params)`` is None unless x is of that form and every
    parameter either absent or [1, hidden, 1, ...].
    """

    def __init__(self, ctx, dims):
        self.ctx, self.dims = ctx, list(dims)
        self.rows, self.hidden = dims[0], math.prod(dims[1:])

    @staticmethod
    def of(ctx, x, params):
        dims = list(x.dim)
        if len(dims) <= 2 or any(d != 1 for d in dims[2:]):
            return None
        for p in params:
            if p is not None and list(p.dim) != [1] + dims[1:]:
                return None
        return _Rows(ctx, dims)

    def flat(self, d):
        if d is None:
            return None
        return self.ctx.graph.reshape(d, [d.dim[0], math.prod(d.dim[1:])])

    def back(self, d, t):
        if d is None:
            return None
        dt = self.ctx.output_type(t, d)
        if dt is not None:
            d.set_data_type(dt)
            if d.get_data_type() != dt:
                # A type the op fixes (its statistics are f32), asked as another
                # (a bf16 graph's untyped mean): converted on the way out.
                d = self.ctx.graph.cast(d, dt)
        shape = [d.dim[0], d.dim[1]] + [1] * (len(self.dims) - 2)
        return self.ctx.graph.reshape(d, shape)


class _ChannelsLast:
    """A channels-last graph input x (N, C, spatial...) in its memory order,
    (N * spatial, C), with its [1, C, 1, ...] operands as (1, C): the
    pointwise ops then run over x as it lies (the transposes are views of
    the graph's buffers on the GPU, dnn-layout-views), where on the logical
    NCHW shape they would read and write through layout copies.
    ``of(g, x, params)`` is None unless x is such an input and every
    parameter [1, C, 1, ...]."""

    def __init__(self, g, dims, order):
        self.g, self.dims, self.order = g, list(dims), order
        self.c = dims[1]

    @staticmethod
    def of(g, x, params):
        from dnnc.decompose import layout  # the compiler's reading of strides

        dims = list(x.dim)
        if x.producer is not None or len(dims) < 3 or math.prod(dims[2:]) <= 1:
            return None
        order = layout.channel_last_order(dims, x.stride)
        if order is None or order == sorted(order):
            return None
        if any(list(t.dim) != [1, dims[1]] + [1] * (len(dims) - 2) for t in params):
            return None
        return _ChannelsLast(g, dims, order)

    def flat(self, t):
        t = self.g.transpose(t, self.order)
        return self.g.reshape(t, [math.prod(self.dims) // self.c, self.c])

    def param(self, t):
        return self.g.reshape(t, [1, self.c])

    def back(self, t):
        t = self.g.reshape(t, [self.dims[d] for d in self.order])
        return self.g.transpose(t, [self.order.index(d) for d in range(len(self.order))])


class NormOps:
    """The normalization methods of ``pygraph``."""

    def layernorm(self, norm_forward_phase, input, scale, bias, epsilon,
                  compute_data_type=data_type.NOT_SET, name=""):
        """Returns (Y, mean, inv_variance); the statistics are None in inference."""
        phase = _phase("layernorm", norm_forward_phase)
        check_pointwise_compute("layernorm", compute_data_type)

        def lower(ctx, node):
            i = node.inputs
            x = ctx.tensor(i["input"], "layernorm input")
            s = ctx.tensor(i["scale"], "layernorm scale")
            b = ctx.tensor(i["bias"], "layernorm bias")
            eps = ctx.scalar_operand(epsilon, "layernorm epsilon")
            rows = _Rows.of(ctx, x, [s, b])
            if rows is None:
                return ctx.graph.layernorm(x, s, b, epsilon=eps, norm_forward_phase=phase)
            made = ctx.graph.layernorm(rows.flat(x), rows.flat(s), rows.flat(b), epsilon=eps,
                                       norm_forward_phase=phase)
            return [rows.back(d, t) for d, t in zip(made, node.outputs)]

        outs = self._add("layernorm", name, {"input": input, "scale": scale, "bias": bias},
                         lower, n_out=3, present=[True] + [phase == "training"] * 2,
                         labels=_STATS)
        return outs

    def rmsnorm(self, norm_forward_phase, input, scale, bias=None, epsilon=None,
                compute_data_type=data_type.NOT_SET, name=""):
        """Returns (Y, inv_variance); inv_variance None in inference."""
        phase = _phase("rmsnorm", norm_forward_phase)
        check_pointwise_compute("rmsnorm", compute_data_type)
        if epsilon is None:
            raise InvalidGraphError("rmsnorm: expected epsilon, got none")

        def lower(ctx, node):
            i = node.inputs
            x = ctx.tensor(i["input"], "rmsnorm input")
            s = ctx.tensor(i["scale"], "rmsnorm scale")
            b = ctx.tensor(i["bias"], "rmsnorm bias")
            eps = ctx.scalar_operand(epsilon, "rmsnorm epsilon")
            rows = _Rows.of(ctx, x, [s, b])
            if rows is None:
                return ctx.graph.rmsnorm(x, s, b, epsilon=eps, norm_forward_phase=phase)
            made = ctx.graph.rmsnorm(rows.flat(x), rows.flat(s), rows.flat(b), epsilon=eps,
                                     norm_forward_phase=phase)
            return [rows.back(d, t) for d, t in zip(made, node.outputs)]

        return self._add("rmsnorm", name, {"input": input, "scale": scale, "bias": bias},
                         lower, n_out=2, present=[True, phase == "training"],
                         labels=["Y", "INV_VARIANCE"])

    def instancenorm(self, norm_forward_phase, input, scale, bias, epsilon,
                     compute_data_type=data_type.NOT_SET, name=""):
        """Returns (Y, mean, inv_variance), statistics per (batch, channel)."""
        phase = _phase("instancenorm", norm_forward_phase)
        check_pointwise_compute("instancenorm", compute_data_type)

        def lower(ctx, node):
            i = node.inputs
            return ctx.graph.instancenorm(
                ctx.tensor(i["input"], "instancenorm input"),
                ctx.tensor(i["scale"], "instancenorm scale"),
                ctx.tensor(i["bias"], "instancenorm bias"),
                epsilon=ctx.scalar(epsilon, "instancenorm epsilon"), norm_forward_phase=phase)

        return self._add("instancenorm", name, {"input": input, "scale": scale, "bias": bias},
                         lower, n_out=3, present=[True] + [phase == "training"] * 2,
                         labels=_STATS)

    def batchnorm(self, input, scale, bias, in_running_mean, in_running_var, epsilon, momentum,
                  peer_stats=(), compute_data_type=data_type.NOT_SET, name=""):
        """Training batchnorm; returns (Y, mean, inv_variance,
        next_running_mean, next_running_var)."""
        _no_peers("batchnorm", peer_stats)
        check_pointwise_compute("batchnorm", compute_data_type)
        running = in_running_mean is not None

        def lower(ctx, node):
            i = node.inputs
            return ctx.graph.batchnorm(
                ctx.tensor(i["input"], "batchnorm input"),
                ctx.tensor(i["scale"], "batchnorm scale"),
                ctx.tensor(i["bias"], "batchnorm bias"),
                in_running_mean=ctx.tensor(i["in_running_mean"], "batchnorm in_running_mean"),
                in_running_var=ctx.tensor(i["in_running_var"], "batchnorm in_running_var"),
                epsilon=ctx.scalar(epsilon, "batchnorm epsilon"),
                momentum=ctx.scalar(momentum, "batchnorm momentum") if running else 0.1)

        return self._add("batchnorm", name,
                         {"input": input, "scale": scale, "bias": bias,
                          "in_running_mean": in_running_mean, "in_running_var": in_running_var},
                         lower, n_out=5, present=[True, True, True, running, running],
                         labels=_STATS + ["NEXT_RUNNING_MEAN", "NEXT_RUNNING_VAR"])

    def batchnorm_inference(self, input, mean, inv_variance, scale, bias,
                            compute_data_type=data_type.NOT_SET, name=""):
        """(input - mean) * inv_variance * scale + bias; one output."""
        check_pointwise_compute("batchnorm_inference", compute_data_type)

        def lower(ctx, node):
            i = node.inputs
            g = ctx.graph
            x = ctx.tensor(i["input"], "batchnorm_inference input")
            p = {k: ctx.tensor(i[k], f"batchnorm_inference {k}")
                 for k in ("mean", "inv_variance", "scale", "bias")}
            view = _ChannelsLast.of(g, x, p.values())
            if view is not None:
                x, p = view.flat(x), {k: view.param(t) for k, t in p.items()}
            y = g.add(g.mul(g.mul(g.sub(x, p["mean"]), p["inv_variance"]), p["scale"]),
                      p["bias"])
            return [view.back(y) if view is not None else y]

        return self._add("batchnorm_inference", name,
                         {"input": input, "mean": mean, "inv_variance": inv_variance,
                          "scale": scale, "bias": bias}, lower, labels=["Y"])[0]

    def batchnorm_backward(self, grad, input, scale, mean, inv_variance, peer_stats=(),
                           compute_data_type=data_type.NOT_SET, name=""):
        """Returns (DX, DScale, DBias)."""
        _no_peers("batchnorm_backward", peer_stats)
        check_pointwise_compute("batchnorm_backward", compute_data_type)

        def lower(ctx, node):
            i = node.inputs
            return ctx.graph.batchnorm_backward(
                ctx.tensor(i["grad"], "batchnorm_backward grad"),
                ctx.tensor(i["input"], "batchnorm_backward input"),
                ctx.tensor(i["scale"], "batchnorm_backward scale"),
                ctx.tensor(i["mean"], "batchnorm_backward mean"),
                ctx.tensor(i["inv_variance"], "batchnorm_backward inv_variance"))

        return self._add("batchnorm_backward", name,
                         {"grad": grad, "input": input, "scale": scale, "mean": mean,
                          "inv_variance": inv_variance}, lower, n_out=3, labels=_GRADS)

    def layernorm_backward(self, grad, input, scale, mean, inv_variance,
                           compute_data_type=data_type.NOT_SET, name=""):
        """Returns (DX, DScale, DBias)."""
        check_pointwise_compute("layernorm_backward", compute_data_type)

        def lower(ctx, node):
            i = node.inputs
            dy = ctx.tensor(i["grad"], "layernorm_backward grad")
            x = ctx.tensor(i["input"], "layernorm_backward input")
            s = ctx.tensor(i["scale"], "layernorm_backward scale")
            m = ctx.tensor(i["mean"], "layernorm_backward mean")
            iv = ctx.tensor(i["inv_variance"], "layernorm_backward inv_variance")
            rows = _Rows.of(ctx, x, [s])
            if rows is None or list(dy.dim) != list(x.dim):
                return ctx.graph.layernorm_backward(dy, x, scale=s, mean=m, inv_variance=iv,
                                                    has_bias=True)
            made = ctx.graph.layernorm_backward(
                rows.flat(dy), rows.flat(x), scale=rows.flat(s), mean=rows.flat(m),
                inv_variance=rows.flat(iv), has_bias=True)
            return [rows.back(d, t) for d, t in zip(made, node.outputs)]

        return self._add("layernorm_backward", name,
                         {"grad": grad, "input": input, "scale": scale, "mean": mean,
                          "inv_variance": inv_variance}, lower, n_out=3, labels=_GRADS)

    def rmsnorm_backward(self, grad, input, scale, inv_variance, has_dbias,
                         compute_data_type=data_type.NOT_SET, name=""):
        """Returns (DX, DScale, DBias); DBias None unless ``has_dbias``."""
        check_pointwise_compute("rmsnorm_backward", compute_data_type)

        def lower(ctx, node):
            i = node.inputs
            dy = ctx.tensor(i["grad"], "rmsnorm_backward grad")
            x = ctx.tensor(i["input"], "rmsnorm_backward input")
            s = ctx.tensor(i["scale"], "rmsnorm_backward scale")
            iv = ctx.tensor(i["inv_variance"], "rmsnorm_backward inv_variance")
            rows = _Rows.of(ctx, x, [s])
            if rows is None or list(dy.dim) != list(x.dim):
                return ctx.graph.rmsnorm_backward(dy, x, scale=s, inv_rms=iv,
                                                  has_bias=bool(has_dbias))
            made = ctx.graph.rmsnorm_backward(rows.flat(dy), rows.flat(x), scale=rows.flat(s),
                                              inv_rms=rows.flat(iv), has_bias=bool(has_dbias))
            return [rows.back(d, t) for d, t in zip(made, node.outputs)]

        return self._add("rmsnorm_backward", name,
                         {"grad": grad, "input": input, "scale": scale,
                          "inv_variance": inv_variance}, lower, n_out=3,
                         present=[True, True, bool(has_dbias)], labels=_GRADS)

    def instancenorm_backward(self, grad, input, scale, mean=None, inv_variance=None,
                              compute_data_type=data_type.NOT_SET, name=""):
        """Returns (DX, DScale, DBias)."""
        check_pointwise_compute("instancenorm_backward", compute_data_type)

        def lower(ctx, node):
            i = node.inputs
            return ctx.graph.instancenorm_backward(
                ctx.tensor(i["grad"], "instancenorm_backward grad"),
                ctx.tensor(i["input"], "instancenorm_backward input"),
                scale=ctx.tensor(i["scale"], "instancenorm_backward scale"),
                mean=ctx.tensor(i["mean"], "instancenorm_backward mean"),
                inv_variance=ctx.tensor(i["inv_variance"], "instancenorm_backward inv_variance"),
                has_bias=True)

        return self._add("instancenorm_backward", name,
                         {"grad": grad, "input": input, "scale": scale, "mean": mean,
                          "inv_variance": inv_variance}, lower, n_out=3, labels=_GRADS)

    def adalayernorm(self, norm_forward_phase, input, scale, bias=None, epsilon=None,
                     compute_data_type=data_type.NOT_SET, name=""):
        raise unsupported("adalayernorm", "adaptive layernorm (per-row scale and bias) is not "
                          "supported by dnnc")

    def adalayernorm_backward(self, grad, input, scale, mean, inv_variance,
                              compute_data_type=data_type.NOT_SET, name=""):
        raise unsupported("adalayernorm_backward", "adaptive layernorm is not supported by dnnc")

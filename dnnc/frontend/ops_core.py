"""cudnn-frontend's convolution, matmul, reduction and tensor ops on a ``pygraph``.

Signatures follow ``python/pygraph/pygraph.cpp``. Two cuDNN conventions the
lowering keeps:

- A gradient convolution's output shape is the caller's: ``conv_dgrad``'s
  DX and ``conv_wgrad``'s DW take the dims given with ``set_dim`` (cuDNN
  cannot deduce them either: stride and padding lose information).
- A reduction reduces the axes where the caller's output dims are 1 and
  the input's are not (``Y.set_dim([n, 1, h, w])`` sums over channels).

Convolution and matmul pass ``compute_data_type`` to dnnc, which takes
FLOAT (and TF32), and INT32 for int8 / uint8 operands (exact integer
accumulation, cuDNN's only choice for them: NOT_SET gives it too);
padding, stride and dilation default as in cuDNN (0, 1, 1).
"""

from dnnc.frontend import enums
from dnnc.frontend.enums import convolution_mode, data_type, reduction_mode
from dnnc.frontend.errors import InvalidGraphError
from dnnc.frontend.lowering import unsupported

_REDUCTIONS = {
    reduction_mode.ADD: "sum", reduction_mode.MUL: "prod", reduction_mode.MIN: "min",
    reduction_mode.MAX: "max", reduction_mode.AMAX: "amax", reduction_mode.AVG: "mean",
    reduction_mode.NORM1: "norm1", reduction_mode.NORM2: "norm2",
}


def _compute(op, compute_data_type):
    """dnnc's compute type for a matmul or convolution (None: the graph's)."""
    dt = enums.library_type(compute_data_type)
    if dt in (data_type.NOT_SET,):
        return None
    if dt is data_type.FAST_FLOAT_FOR_FP8:
        return enums.to_dnnc(data_type.FLOAT, op)
    if dt not in (data_type.FLOAT, data_type.INT32):
        raise unsupported(op, f"compute_data_type: expected FLOAT (or INT32 for int8 "
                          f"operands), got {dt.name}")
    return enums.to_dnnc(dt, op)


def _conv_mode(op, mode):
    mode = enums.enum_member(convolution_mode, mode, f"{op} convolution_mode")
    return "convolution" if mode is convolution_mode.CONVOLUTION else "cross_correlation"


def _padding(padding, pre_padding, post_padding):
    if padding is not None and list(padding):
        if (pre_padding and list(pre_padding)) or (post_padding and list(post_padding)):
            raise InvalidGraphError("convolution: expected padding or pre_padding/post_padding, "
                                    "got both")
        return list(padding), list(padding)
    pre = list(pre_padding) if pre_padding is not None and list(pre_padding) else None
    post = list(post_padding) if post_padding is not None and list(post_padding) else None
    return pre, post


def _nonempty(values):
    return list(values) if values is not None and list(values) else None


class CoreOps:
    """Convolution, matmul, reduction and tensor methods of ``pygraph``."""

    def conv_fprop(self, image, weight, padding=None, stride=None, dilation=None,
                   convolution_mode=convolution_mode.CROSS_CORRELATION,
                   compute_data_type=data_type.NOT_SET, name="", pre_padding=None,
                   post_padding=None):
        """Y = image (*) weight; one output."""
        pre, post = _padding(padding, pre_padding, post_padding)
        mode = _conv_mode("conv_fprop", convolution_mode)
        compute = _compute("conv_fprop", compute_data_type)

        def lower(ctx, node):
            return [ctx.graph.conv_fprop(
                ctx.tensor(node.inputs["image"], "conv_fprop image"),
                ctx.tensor(node.inputs["weight"], "conv_fprop weight"),
                stride=_nonempty(stride), dilation=_nonempty(dilation), pre_padding=pre,
                post_padding=post, conv_mode=mode, compute_data_type=compute)]

        return self._add("conv_fprop", name, {"image": image, "weight": weight}, lower,
                         labels=["Y"])[0]

    def conv_dgrad(self, loss, filter, padding=None, stride=None, dilation=None,
                   convolution_mode=convolution_mode.CROSS_CORRELATION,
                   compute_data_type=data_type.NOT_SET, name="", pre_padding=None,
                   post_padding=None):
        """DX from DY and the filter; set DX's dims (the image's) with ``set_dim``."""
        pre, post = _padding(padding, pre_padding, post_padding)
        mode = _conv_mode("conv_dgrad", convolution_mode)
        compute = _compute("conv_dgrad", compute_data_type)

        def lower(ctx, node):
            dx = node.outputs[0]
            if not dx._user_dim:
                raise InvalidGraphError("conv_dgrad: output DX: expected dims from set_dim "
                                        "(the image's), got none")
            return [ctx.graph.conv_dgrad(
                ctx.tensor(node.inputs["loss"], "conv_dgrad loss"),
                ctx.tensor(node.inputs["filter"], "conv_dgrad filter"), dx._dim,
                stride=_nonempty(stride), dilation=_nonempty(dilation), pre_padding=pre,
                post_padding=post, conv_mode=mode, compute_data_type=compute)]

        return self._add("conv_dgrad", name, {"loss": loss, "filter": filter}, lower,
                         labels=["DX"])[0]

    def conv_wgrad(self, image, loss, padding=None, stride=None, dilation=None,
                   convolution_mode=convolution_mode.CROSS_CORRELATION,
                   compute_data_type=data_type.NOT_SET, name="", pre_padding=None,
                   post_padding=None):
        """DW from the image and DY; set DW's dims (the filter's) with ``set_dim``."""
        pre, post = _padding(padding, pre_padding, post_padding)
        mode = _conv_mode("conv_wgrad", convolution_mode)
        compute = _compute("conv_wgrad", compute_data_type)

        def lower(ctx, node):
            dw = node.outputs[0]
            if not dw._user_dim:
                raise InvalidGraphError("conv_wgrad: output DW: expected dims from set_dim "
                                        "(the filter's), got none")
            return [ctx.graph.conv_wgrad(
                ctx.tensor(node.inputs["image"], "conv_wgrad image"),
                ctx.tensor(node.inputs["loss"], "conv_wgrad loss"), dw._dim,
                stride=_nonempty(stride), dilation=_nonempty(dilation), pre_padding=pre,
                post_padding=post, conv_mode=mode, compute_data_type=compute)]

        return self._add("conv_wgrad", name, {"image": image, "loss": loss}, lower,
                         labels=["DW"])[0]

    def matmul(self, A, B, compute_data_type=data_type.NOT_SET, padding=0.0, name=""):
        """C = A @ B over the last two dims, batch dims broadcast."""
        if float(padding) != 0.0:
            raise unsupported("matmul", f"padding: expected 0.0 (dnnc has no padded matmul), "
                              f"got {padding}")
        compute = _compute("matmul", compute_data_type)

        def lower(ctx, node):
            return [ctx.graph.matmul(ctx.tensor(node.inputs["A"], "matmul A"),
                                     ctx.tensor(node.inputs["B"], "matmul B"),
                                     compute_data_type=compute)]

        return self._add("matmul", name, {"A": A, "B": B}, lower, labels=["C"])[0]

    def reduction(self, input, mode, compute_data_type=data_type.NOT_SET, name=""):
        """Reduce ``input`` to the output dims the caller sets (``set_dim``):
        the axes where they are 1."""
        mode = enums.enum_member(reduction_mode, mode, "reduction mode")
        if mode not in _REDUCTIONS:
            raise unsupported("reduction", f"mode {mode.name} is not supported by dnnc: "
                              f"expected one of {', '.join(m.name for m in _REDUCTIONS)}")
        _compute("reduction", compute_data_type)

        def lower(ctx, node):
            x = node.inputs["input"]
            y = node.outputs[0]
            if not y._user_dim:
                raise InvalidGraphError("reduction: output: expected dims from set_dim (1 on "
                                        "the reduced axes), got none")
            xd = ctx.tensor(x, "reduction input")
            if len(y._dim) != len(xd.dim):
                raise InvalidGraphError(f"reduction: output dims {y._dim}: expected rank "
                                        f"{len(xd.dim)} (the input's {list(xd.dim)})")
            axes = []
            for i, (a, b) in enumerate(zip(xd.dim, y._dim)):
                if b == 1 and a != 1:
                    axes.append(i)
                elif b != a:
                    raise InvalidGraphError(f"reduction: output dim {i}: expected 1 or "
                                            f"{a} (the input's), got {b}")
            if not axes:
                return [ctx.graph.mul(xd, ctx.graph.constant(1.0))]  # nothing to reduce
            return [ctx.graph.reduction(xd, _REDUCTIONS[mode], axes, keepdims=True)]

        return self._add("reduction", name, {"input": input}, lower, dims_from_caller=True)[0]

    def genstats(self, input, compute_data_type=data_type.NOT_SET, name=""):
        """Per-channel sum and sum of squares of an N, C, ... tensor:
        returns (SUM, SQ_SUM), each [1, C, 1, ...]."""
        _compute("genstats", compute_data_type)

        def lower(ctx, node):
            x = ctx.tensor(node.inputs["input"], "genstats input")
            axes = [i for i in range(len(x.dim)) if i != 1]
            g = ctx.graph
            return [g.reduction(x, "sum", axes, keepdims=True),
                    g.reduction(g.square(x), "sum", axes, keepdims=True)]

        return tuple(self._add("genstats", name, {"input": input}, lower, n_out=2,
                                    labels=["SUM", "SQ_SUM"]))

    def slice(self, input, slices=(), compute_data_type=data_type.NOT_SET, name=""):
        """A strided window of ``input``: one Python ``slice`` per dim (missing
        dims whole)."""
        slices = list(slices)

        def lower(ctx, node):
            return [ctx.graph.slice(ctx.tensor(node.inputs["input"], "slice input"),
                                    slices=slices)]

        return self._add("slice", name, {"input": input}, lower)[0]

    def reshape(self, input, name="", reshape_mode=enums.reshape_mode.VIEW_ONLY):
        """The same elements in row-major order, with the output dims the
        caller sets (``set_dim``)."""
        def lower(ctx, node):
            y = node.outputs[0]
            if not y._user_dim:
                raise InvalidGraphError("reshape: output: expected dims from set_dim, got none")
            return [ctx.graph.reshape(ctx.tensor(node.inputs["input"], "reshape input"), y._dim)]

        return self._add("reshape", name, {"input": input}, lower, dims_from_caller=True)[0]

    def transpose(self, input, permutation, compute_data_type=data_type.NOT_SET, name=""):
        """out.dim[i] = input.dim[permutation[i]]."""
        def lower(ctx, node):
            return [ctx.graph.transpose(ctx.tensor(node.inputs["input"], "transpose input"),
                                        list(permutation))]

        return self._add("transpose", name, {"input": input}, lower)[0]

    def concatenate(self, inputs, axis, in_place_index=None, name=""):
        """Join ``inputs`` along ``axis``."""
        if in_place_index is not None:
            raise unsupported("concatenate", "in_place_index (writing into one input's buffer) "
                              "is not supported by dnnc")
        inputs = list(inputs)

        def lower(ctx, node):
            return [ctx.graph.concat([ctx.tensor(t, "concatenate input")
                                      for t in node.inputs["inputs"]], axis)]

        return self._add("concatenate", name, {"inputs": inputs}, lower)[0]

    # -- what dnnc does not implement ---------------------------------------------

    def block_scale_quantize(self, input, block_size, axis=None, transpose=False,
                             compute_data_type=data_type.NOT_SET, name=""):
        raise unsupported("block_scale_quantize", "block-scaled (mxfp8/nvfp4) quantization is "
                          "not supported by dnnc")

    def block_scale_dequantize(self, input, descale, block_size, is_negative_scale=False,
                               compute_data_type=data_type.NOT_SET, name=""):
        raise unsupported("block_scale_dequantize", "block-scaled (mxfp8/nvfp4) dequantization "
                          "is not supported by dnnc")

    def moe_grouped_matmul(self, token, weight, first_token_offset, *args, **kwargs):
        raise unsupported("moe_grouped_matmul", "grouped (MoE) matmul is not supported by dnnc")

    def moe_grouped_matmul_bwd(self, doutput, token, first_token_offset, *args, **kwargs):
        raise unsupported("moe_grouped_matmul_bwd", "grouped (MoE) matmul is not supported by "
                          "dnnc")

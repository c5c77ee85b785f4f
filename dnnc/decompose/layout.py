"""The memory layouts a graph declares, as the decomposition rules see them.

A graph input or output carries its physical strides as ``dnn.strides`` on
the graph function's argument or result (dnnc/graph_mlir.py); every other
tensor is row-major. A rule that can work along the memory order of a
strided input (a channels-last batchnorm reads x as (N*H*W, C),
dnnc/decompose/batchnorm.py) asks for it here; the transposes it then emits
between the logical and the memory order move no data on the GPU
(dnn-layout-views makes them views of the graph's buffers).
"""

from mlir import ir


def _graph_function(block):
    op = block.owner
    op = getattr(op, "operation", op)
    if op is None or op.name != "func.func" or "dnn.graph" not in op.attributes:
        return None
    return op


def _strides(fn, key, index):
    if key not in fn.attributes:
        return None
    attrs = ir.DictAttr(ir.ArrayAttr(fn.attributes[key])[index])
    if "dnn.strides" not in attrs:
        return None
    return [int(s) for s in ir.DenseI64ArrayAttr(attrs["dnn.strides"])]


def input_strides(value):
    """The strides ``value`` declares when it is an input of the graph
    function (one of its arguments); None otherwise."""
    if not isinstance(value.owner, ir.Block):
        return None
    fn = _graph_function(value.owner)
    return None if fn is None else _strides(fn, "arg_attrs", value.arg_number)


def result_strides(value):
    """The strides declared by each graph result that returns ``value``."""
    out = []
    for use in value.uses:
        op = getattr(use.owner, "operation", use.owner)
        if op.name != "func.return":
            continue
        fn = _graph_function(op.block)
        if fn is not None:
            out.append(_strides(fn, "res_attrs", use.operand_number))
    return out


def channel_last_order(shape, strides):
    """The permutation that lists x's dims in memory order, outermost first,
    when ``strides`` lay ``shape`` out densely with dim 1 (the channels)
    innermost; None otherwise. Unit dims move no data and come first."""
    if strides is None or len(strides) != len(shape) or len(shape) < 2:
        return None
    units = [d for d, n in enumerate(shape) if n == 1 and d != 1]
    others = sorted((d for d, n in enumerate(shape) if n != 1 and d != 1),
                    key=lambda d: -strides[d])
    step = 1
    for d in [1] + others[::-1]:
        if shape[d] != 1 and strides[d] != step:
            return None
        step *= shape[d]
    return units + others + [1]


# Ops whose result the GPU back end lays out channels-last when its readers
# take any layout (dnn-conv-layouts: a tensor-core or depthwise
# convolution's output).
CHANNELS_LAST_WRITERS = ("dnn.conv_fprop", "dnn.conv_dgrad")


def written_channels_last(value):
    """Whether ``value`` is the result of an op in CHANNELS_LAST_WRITERS."""
    if isinstance(value.owner, ir.Block):
        return False
    op = getattr(value.owner, "operation", value.owner)
    return op.name in CHANNELS_LAST_WRITERS


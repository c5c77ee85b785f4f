"""What every ``dnnc::`` op of ``dnnc.torch`` shares: the torch.library
namespace, layouts, and ``call``, which runs one dnnc graph on the op's
tensors through runner.py.

    outs = call("conv", attrs, [("x", x), ("w", w)], build, [x.dtype])

``build(graph, inputs)`` gets a fresh ``dnnc.Graph`` and a dict of its
inputs (one per present tensor, with that tensor's dims, strides and dtype)
and returns the graph tensors to output, each with its data type and
strides set. The graph is built and compiled once per signature: op name,
``attrs`` (hashable), each tensor's dtype, shape and strides, the device
and, on CUDA, its arch (runner.compiled); later calls only run it.
"""

import math

import torch

from dnnc.dialect.types import data_type
from dnnc.errors import GraphError
from dnnc.torch import runner

NAMESPACE = "dnnc"
DTYPES = runner.DTYPES


def qualified(name):
    return f"{NAMESPACE}::{name}"


def call(op, attrs, tensors, build, out_dtypes):
    """Run the graph of ``op`` (see the module docstring) on ``tensors``
    ((name, tensor or None) pairs; None is left out of the graph) and
    return the torch outputs, allocated here with the strides the graph
    declares."""
    from dnnc.graph import Graph

    present = [(n, t) for n, t in tensors if t is not None]
    device = present[0][1].device
    key = (op, attrs, tuple((n, runner.tensor_spec(t)) for n, t in present))

    def make():
        graph = Graph(name=op)
        inputs = {n: runner.graph_input(graph, n, t) for n, t in present}
        for t in build(graph, inputs):
            t.set_output(True)
        return graph

    exe = runner.compiled(key, make, device)
    outs = runner.empty_outputs(exe, out_dtypes, device)
    return runner.run(exe, [t for _, t in present], outs)


def output(t, dtype, strides=None):
    """Mark graph tensor ``t`` an output of torch dtype ``dtype`` (and strides)."""
    t.set_data_type(DTYPES[dtype])
    if strides is not None:
        t.set_stride(list(strides))
    return t


def stats(t):
    """A graph's f32 statistic (mean, inverse deviation) as an output."""
    return t.set_data_type(data_type.FLOAT)


def contiguous_strides(shape):
    strides, step = [], 1
    for d in reversed(list(shape)):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def channels_last_strides(shape):
    """Strides of N, C, spatial... stored as N, spatial..., C."""
    n, c, *spatial = list(shape)
    strides = [0] * len(shape)
    step = 1
    strides[1] = step
    step *= max(int(c), 1)
    for i in range(len(shape) - 1, 1, -1):
        strides[i] = step
        step *= max(int(shape[i]), 1)
    strides[0] = step
    return tuple(strides)


def is_channels_last(t):
    """Whether ``t`` (rank 4 or 5) is stored channels-last and not also
    row-major (a tensor with C = 1 or 1x1 spatial is both: row-major wins)."""
    if t.dim() == 4:
        fmt = torch.channels_last
    elif t.dim() == 5:
        fmt = torch.channels_last_3d
    else:
        return False
    return t.is_contiguous(memory_format=fmt) and not t.is_contiguous()


def layout_like(shape, x):
    """Strides of an output of ``shape`` computed from image ``x``: channels-last
    when ``x`` is, as PyTorch's convolution and pooling do, else row-major."""
    return channels_last_strides(shape) if is_channels_last(x) else contiguous_strides(shape)


def dense(t):
    """``t`` if it is row-major or channels-last, else a row-major copy: the
    layouts dnnc.torch compiles graphs for (a key per strided view would
    compile a graph per view)."""
    if t is None or t.is_contiguous() or is_channels_last(t):
        return t
    return t.contiguous()


def empty(shape, dtype, device, channels_last=False):
    """A fake or real output tensor of ``shape``, row-major or channels-last
    (the strides ``layout_like`` gives a graph's output; torch's own
    formula, so that symbolic shapes stay symbolic under tracing)."""
    shape = list(shape)
    fmt = torch.contiguous_format
    if channels_last:
        fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    return torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)


def check(cond, op, message):
    """Raise GraphError naming ``op`` unless ``cond``."""
    if not cond:
        raise GraphError(f"dnnc::{op}: {message}")


def numel(shape):
    return math.prod(int(d) for d in shape)

"""One region of an ATen FX graph as a ``dnnc.Graph``: the state the op
mappings of aten_map.py write into.

    low = Lowering("region0", device_type="cpu")
    for node in region_nodes:               # in graph order
        low.emit(node)                      # aten_map.TABLE[node.target](low, node)
    low.set_outputs(nodes_used_outside)
    low.graph                               # the dnnc.Graph, ready to compile

A node outside the region becomes a graph input the first time an op reads it
(``value``), with the dims, element type and layout of its example value
(``node.meta["val"]``): contiguous, or channels-last where the example is, and
contiguous for any other strides (the runner copies such a tensor into that
layout, compiled.py). Each value takes its node's element type
(aten_map.lower), each output too.

Torch broadcasts an ``expand`` by strides; a dnnc tensor has its full dims. An
expanded value every consumer of which broadcasts (pointwise ops) needs
nothing; one that must have its full dims is added to a zero input of those
dims whose strides are all 0 (one element stored: ``zeros`` inputs, which the
runner makes).
"""

import operator
from dataclasses import dataclass

import torch

from dnnc.dialect.types import data_type
from dnnc.errors import UnsupportedError
from dnnc.graph import Graph, contiguous_strides

# Torch element types dnnc stores; anything else stays in torch.
DTYPES = {
    torch.float32: data_type.FLOAT,
    torch.float16: data_type.HALF,
    torch.bfloat16: data_type.BFLOAT16,
    torch.bool: data_type.BOOLEAN,
    torch.int32: data_type.INT32,
    torch.int8: data_type.INT8,
    torch.uint8: data_type.UINT8,
}


def dnnc_type(dtype, what):
    """The dnnc data type of torch ``dtype``; UnsupportedError naming ``what``."""
    try:
        return DTYPES[dtype]
    except KeyError:
        raise UnsupportedError(f"{what}: dtype {dtype}: expected one of "
                               f"{', '.join(str(d).split('.')[-1] for d in DTYPES)} "
                               "(dnnc stores no other)") from None


def example(node):
    """The example value (a FakeTensor, a tuple of them, or a number) of FX ``node``."""
    return node.meta.get("val")


def check_static(val, what):
    """Refuse a value of symbolic dims (dnnc compiles static shapes)."""
    for t in val if isinstance(val, (tuple, list)) else [val]:
        if isinstance(t, torch.Tensor):
            for i, d in enumerate(t.shape):
                if not isinstance(d, int):
                    raise UnsupportedError(f"{what}: dim {i} is symbolic ({d}): expected static "
                                           "shapes (torch.compile(..., dynamic=False))")
        elif isinstance(t, torch.SymInt):
            raise UnsupportedError(f"{what}: a symbolic size: expected static shapes")


# -- reading ATen nodes ------------------------------------------------------------

def arg(node, i, name, default=None):
    """Argument ``i`` (keyword ``name``) of ``node``, else ``default``."""
    if i < len(node.args):
        return node.args[i]
    return node.kwargs.get(name, default)


def dims(node):
    """The dims of ``node``'s example value."""
    return [int(d) for d in example(node).shape]


def axes(dim, rank):
    """ATen's ``dim`` argument as sorted axes (None or []: every axis)."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(rank))
    if isinstance(dim, int):
        dim = [dim]
    return sorted({int(a) % rank for a in dim})


def used(node):
    """The result indices of a multi-result ``node`` that some node reads."""
    return {u.args[1] for u in node.users if u.target is operator.getitem and u.users}


def spatial(value, nd, default):
    """An ATen int-or-list spatial argument as ``nd`` values."""
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        return [default] * nd
    value = [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    return value * nd if len(value) == 1 else value


def channels_last_strides(shape):
    """Strides of a rank-4/5 shape stored channels-last (N, [D,] H, W, C)."""
    order = [0] + list(range(2, len(shape))) + [1]   # outermost to innermost
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= max(int(shape[d]), 1)
    return strides


def layout_of(val):
    """The strides dnnc gets for a value like ``val``: channels-last where it
    is so (rank 4 or 5), else contiguous."""
    shape = [int(d) for d in val.shape]
    if len(shape) in (4, 5) and val.numel() > 1 and \
            _same_strides(shape, list(val.stride()), channels_last_strides(shape)) and \
            not _same_strides(shape, list(val.stride()), contiguous_strides(shape)):
        return channels_last_strides(shape)
    return contiguous_strides(shape)


def input_layout(val):
    """The strides a graph input like ``val`` gets: its own where they do not
    overlap (a transposed view, a slice of a wider buffer, a view that
    aliases.py handed to torch instead of a copy), so that the runner passes
    the tensor as it lies and dnnc reads it in place or copies it itself;
    else layout_of's (the runner copies the tensor into them)."""
    from dnnc_runtime import layout

    shape = [int(d) for d in val.shape]
    strides = [int(s) for s in val.stride()]
    if val.numel() > 1 and layout.problem(shape, strides, output=True) is None:
        return strides
    return layout_of(val)


def _same_strides(shape, a, b):
    # Strides of dims of size 1 say nothing about the layout.
    return all(n == 1 or x == y for n, x, y in zip(shape, a, b))


@dataclass(frozen=True)
class InputSpec:
    """A graph input: FX node ``node`` (None for a zeros input), its dims,
    torch dtype and the strides the graph was built with. With ``perm`` it
    is the node's tensor permuted (``tensor.permute(perm)``, of the strides
    ``base_strides`` before): a transpose of an input is a stride pattern,
    not a copy."""

    node: object
    shape: tuple
    dtype: torch.dtype
    strides: tuple
    perm: tuple = None
    base_strides: tuple = None


@dataclass(frozen=True)
class OutputSpec:
    """A region output: its dims, torch dtype and strides; ``filler`` outputs
    are not computed by dnnc but made as zeros by the runner (the random
    state of an attention op without dropout, which only its torch backward
    would read)."""

    shape: tuple
    dtype: torch.dtype
    strides: tuple
    filler: bool = False


class Filler:
    """A result of an ATen op that dnnc does not compute: zeros of its
    example's dims and dtype (see OutputSpec)."""


class Lowering:
    """A dnnc.Graph under construction from ATen nodes (module docstring)."""

    def __init__(self, name, device_type="cpu", conv_compute="float", matmul_compute="float"):
        self.graph = Graph(name=name)
        self.device_type = device_type
        # What convolutions and matmuls multiply in ("float" or "tf32"): as
        # torch would for these tensors (compiled.compute_types).
        self.conv_compute = conv_compute
        self.matmul_compute = matmul_compute
        self.env = {}         # FX node -> dnnc Tensor, tuple of them, or Filler
        self.inputs = []      # InputSpec, in graph input order
        self.outputs = []     # OutputSpec, in region output order
        self.output_tensors = []  # dnnc Tensor or Filler per output
        self._zeros = {}      # shape -> zeros input Tensor

    def compute(self, kind, *tensors):
        """The compute_data_type of a convolution (``kind`` "conv") or matmul
        ("matmul") of ``tensors``: tf32 only for f32 operands where torch
        would use it, else exact f32."""
        asked = self.conv_compute if kind == "conv" else self.matmul_compute
        if asked == "tf32" and all(self.graph._resolve_dtype(t) is data_type.FLOAT
                                   for t in tensors):
            return "tf32"
        return "float"

    # -- values ----------------------------------------------------------------

    def value(self, arg, what="operand"):
        """The dnnc tensor of ``arg``: an FX node of the region, or outside it
        (a graph input, made on first use), or a Python number (a constant)."""
        if isinstance(arg, torch.fx.Node):
            if arg in self.env:
                v = self.env[arg]
                if v is None or isinstance(v, (tuple, Filler, int, float)):
                    raise UnsupportedError(f"{arg.name}: expected a tensor, got "
                                           f"{type(v).__name__}")
                return v
            return self._input(arg)
        if isinstance(arg, bool):
            return self.graph.constant(float(arg), data_type.BOOLEAN)
        if isinstance(arg, (int, float)):
            return self.graph.constant(float(arg))
        raise UnsupportedError(f"{what}: expected a tensor or a number, got "
                               f"{type(arg).__name__}")

    def _input(self, node):
        val = example(node)
        if not isinstance(val, torch.Tensor):
            raise UnsupportedError(f"input '{node.name}': expected a tensor, got "
                                   f"{type(val).__name__}")
        check_static(val, f"input '{node.name}'")
        dt = dnnc_type(val.dtype, f"input '{node.name}'")
        shape = tuple(int(d) for d in val.shape)
        strides = tuple(input_layout(val))
        t = self.graph.tensor(name=f"in{len(self.inputs)}", dim=list(shape),
                              stride=list(strides), data_type=dt)
        self.inputs.append(InputSpec(node, shape, val.dtype, strides))
        self.env[node] = t
        return t

    def permuted(self, arg, perm):
        """``arg`` with its dims permuted (out dim i = dim ``perm[i]``): for a
        node outside the region, an input of the permuted strides (no copy);
        else a dnnc transpose."""
        perm = [int(p) for p in perm]
        if not isinstance(arg, torch.fx.Node) or arg in self.env:
            return self.graph.transpose(self.value(arg), perm)
        key = (arg, tuple(perm))
        if key not in self.env:
            val = example(arg)
            check_static(val, f"input '{arg.name}'")
            dt = dnnc_type(val.dtype, f"input '{arg.name}'")
            base = input_layout(val)
            shape = tuple(int(val.shape[p]) for p in perm)
            strides = tuple(base[p] for p in perm)
            self.env[key] = self.graph.tensor(name=f"in{len(self.inputs)}", dim=list(shape),
                                              stride=list(strides), data_type=dt)
            self.inputs.append(InputSpec(arg, shape, val.dtype, strides, tuple(perm),
                                         tuple(base)))
        return self.env[key]

    def zeros(self, shape, dtype=torch.float32):
        """A zero input of ``shape`` whose strides are all 0."""
        shape = tuple(int(d) for d in shape)
        if shape not in self._zeros:
            t = self.graph.tensor(name=f"zeros{len(self._zeros)}", dim=list(shape),
                                  stride=[0] * len(shape), data_type=DTYPES[dtype])
            self.inputs.append(InputSpec(None, shape, dtype, (0,) * len(shape)))
            self._zeros[shape] = t
        return self._zeros[shape]

    def full(self, t, shape):
        """``t`` broadcast to ``shape`` with every element stored (a no-op
        when it has those dims already)."""
        shape = [int(d) for d in shape]
        if list(t.dim) == shape:
            return t
        if len(t.dim) < len(shape):
            t = self.graph.reshape(t, [1] * (len(shape) - len(t.dim)) + list(t.dim))
        for i, (a, b) in enumerate(zip(t.dim, shape)):
            if a not in (1, b):
                raise UnsupportedError(f"broadcast: dim {i}: expected 1 or {b}, got {a}")
        return self.graph.add(t, self.zeros(shape))

    def shaped(self, t, node):
        """``t`` with the dims of ``node``'s example, broadcast when smaller."""
        return self.full(t, example(node).shape)

    # -- outputs ---------------------------------------------------------------

    def set_outputs(self, nodes):
        """Make the values of ``nodes`` the region's outputs, in order, each of
        its example's dims, dtype and layout."""
        for node in nodes:
            val = example(node)
            v = self.env[node]
            if isinstance(v, Filler):
                self.outputs.append(OutputSpec(tuple(val.shape), val.dtype,
                                               tuple(val.stride()), filler=True))
                self.output_tensors.append(v)
                continue
            dt = dnnc_type(val.dtype, f"output '{node.name}'")
            v = self.full(v, val.shape)
            if v.producer is None or v.is_output:
                v = self.graph.cast(v, dt)    # a copy of an input or of another output
            v.set_data_type(dt)
            if self.graph._resolve_dtype(v) is not dt:   # a fixed type, or data movement
                v = self.graph.cast(v, dt)
                v.set_data_type(dt)
            strides = layout_of(val)
            v.set_stride(strides)
            v.set_output(True)
            self.outputs.append(OutputSpec(tuple(int(d) for d in val.shape), val.dtype,
                                           tuple(strides)))
            self.output_tensors.append(v)

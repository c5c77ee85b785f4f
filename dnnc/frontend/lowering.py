"""Lowering a recorded ``pygraph`` to a ``dnnc.Graph``.

A frontend graph records its ops (``Node``) and lowers them when it is
validated or built, not as they are added: cudnn-frontend lets the caller
set an output's dims after the op that makes it (a reduction's reduced
axes, a gradient convolution's shape), and gives pass-by-value scalars
(epsilon, a scale) their values only at ``execute``. ``Lowering`` holds one
lowering: the dnnc graph, the dnnc tensor of each frontend tensor, and the
values of the pass-by-value scalars (``values``, by uid; a placeholder 1.0
where they are not known yet, for dims and type inference).

A pass-by-value scalar whose value comes with ``execute`` becomes a dnnc
runtime scalar (``Graph.scalar``: an f32 kernel argument) wherever dnnc
takes one: a pointwise operand, the epsilon of layernorm and rmsnorm
(``scalar_operand``). Then one compiled plan serves every value. Where dnnc
compiles the value in (an attribute: sdpa's attn_scale, a relu's slope,
batchnorm's epsilon and momentum; ``scalar``), the scalar is listed in
``scalars`` and the plan is compiled per value, as it is for every scalar
when ``runtime`` is False (the compiler refused a runtime scalar).

Each op's ``lower(ctx, node)`` returns the dnnc tensors of its outputs, in
order (None where the op has none). After the ops, ``finish`` applies what
the caller set on the outputs (output flag, data type, strides) and checks
the dims the caller set against dnnc's.
"""

from dnnc.errors import DnncError, GraphError, UnsupportedError
from dnnc.frontend import enums
from dnnc.frontend.errors import (InvalidGraphError, cudnnGraphNotSupportedError)
from dnnc.graph import Graph, contiguous_strides


class Node:
    """One recorded op: its name, its tensor inputs, its outputs and how to lower it."""

    __slots__ = ("op", "name", "inputs", "outputs", "lower", "dims_from_caller")

    def __init__(self, op, name, inputs, lower, dims_from_caller=False):
        self.op = op
        self.name = name
        self.inputs = inputs          # argument name -> tensor | None | [tensor]
        self.outputs = []
        self.lower = lower
        self.dims_from_caller = dims_from_caller  # its outputs' dims are the caller's to set


def unsupported(op, what):
    """The error for an op or option dnnc does not implement."""
    return cudnnGraphNotSupportedError(f"{op}: {what}")


class Lowering:
    """One lowering of a frontend graph (see the module docstring)."""

    PLACEHOLDER = 1.0

    def __init__(self, fgraph, values=None, runtime=True):
        self.fgraph = fgraph
        self.values = dict(values or {})
        self.runtime = runtime       # lower pass-by-value scalars to runtime scalars
        self.graph = Graph(
            name=fgraph.name or "main",
            io_data_type=enums.to_dnnc(fgraph.io_data_type, "pygraph io_data_type"),
            intermediate_data_type=enums.to_dnnc(fgraph.intermediate_data_type,
                                                 "pygraph intermediate_data_type")
            or enums.to_dnnc(enums.data_type.FLOAT, ""),
            # NOT_SET: not asked, each op's default (dnnc/compute_types.py:
            # f32 convolutions multiply as tf32); FLOAT asks for exact f32.
            compute_data_type=enums.to_dnnc(fgraph.compute_data_type,
                                            "pygraph compute_data_type"))
        self.tensors = {}             # id(frontend tensor) -> dnnc Tensor
        self.inputs = []              # (frontend tensor, dnnc Tensor) of the graph inputs
        self.scalars = []             # pass-by-value frontend tensors read as values
        self.runtime_scalars = []     # pass-by-value frontend tensors lowered to Graph.scalar
        self._names = set()
        self._offsets = set()         # id() of the tensors used as ragged offsets

    # -- reading operands ----------------------------------------------------

    def tensor(self, t, what):
        """The dnnc tensor of frontend tensor ``t`` (a graph input the first
        time one is used); a pass-by-value scalar becomes a dnnc constant."""
        if t is None:
            return None
        known = self.tensors.get(id(t))
        if known is not None:
            return known
        if t._graph is not self.fgraph:
            raise InvalidGraphError(f"{what}: expected a tensor of this graph, got "
                                    f"{'one of another graph' if t._graph else type(t).__name__}")
        if t._producer is not None:
            raise InvalidGraphError(f"{what}: tensor '{t.get_name()}' is used before the op "
                                    "that makes it")
        if t.get_is_pass_by_value():
            dt = enums.to_dnnc(t._data_type, f"tensor '{t.get_name()}'")
            if dt is not None and not dt.is_float:
                raise unsupported(what, f"pass-by-value tensor '{t.get_name()}' of type "
                                  f"{t._data_type.name}: expected a float scalar")
            if self._at_runtime(t):
                made = self._runtime_scalar(t, what)
            else:
                made = self.graph.constant(self.scalar(t, what))
        else:
            made = self._input(t)
        self.tensors[id(t)] = made
        return made

    def _name(self, t, default):
        name = t.get_name() or f"{default}{t.get_uid()}"
        if name in self._names:
            name = f"{name}_{t.get_uid()}"
        self._names.add(name)
        return name

    def _runtime_scalar(self, t, what):
        """A dnnc runtime scalar for pass-by-value tensor ``t`` (one element)."""
        self._one_element(t, what)
        made = self.graph.scalar(name=self._name(t, "scalar"))
        t._inferred_type = enums.library_type(made.get_data_type())
        self.inputs.append((t, made))
        self.runtime_scalars.append(t)
        return made

    def _input(self, t):
        name = self._name(t, "tensor")
        if not t._dim:
            raise InvalidGraphError(f"tensor '{name}': expected dims, got none")
        stride = t._stride or contiguous_strides(t._dim)
        if id(t) in self._offsets and t._data_type == enums.data_type.INT64:
            # cuDNN 9.6+ takes int64 ragged offsets: dnnc's are int32, and
            # execute narrows the bound tensor (offsets past 2^31 elements
            # are refused there).
            dt = enums.to_dnnc(enums.data_type.INT32, "")
        else:
            dt = enums.to_dnnc(t._data_type, f"tensor '{name}'")
        made = self.graph.tensor(name=name, dim=t._dim, stride=stride, data_type=dt)
        t._inferred_type = enums.library_type(made.get_data_type())
        self.inputs.append((t, made))
        if t._ragged_offset is not None:
            self._offsets.add(id(t._ragged_offset))
            made.set_ragged_offset(self.tensor(t._ragged_offset, f"tensor '{name}' ragged "
                                                                 "offset"))
        return made

    def scalar(self, value, what):
        """A build-time float: a Python number, or a pass-by-value tensor's value."""
        if value is None:
            return None
        if isinstance(value, (int, float)):
            return float(value)
        t = value
        if not t.get_is_pass_by_value():
            raise unsupported(what, f"tensor '{t.get_name()}' is a device tensor; dnnc compiles "
                              "this value into the kernels: expected a pass-by-value tensor "
                              "(is_pass_by_value=True) or a Python float")
        self._one_element(t, what)
        if t not in self.scalars:
            self.scalars.append(t)
        if t._value is not None:
            return float(t._value)
        return float(self.values.get(t.get_uid(), self.PLACEHOLDER))

    def scalar_operand(self, value, what):
        """A scalar an op takes either as a number or as a rank-0 tensor (the
        epsilon of layernorm and rmsnorm): a runtime scalar for a pass-by-value
        tensor whose value comes with execute, else ``scalar``'s float."""
        if value is not None and not isinstance(value, (int, float)) and \
                value.get_is_pass_by_value() and self._at_runtime(value):
            return self.tensor(value, what)
        return self.scalar(value, what)

    def _at_runtime(self, t):
        """Whether pass-by-value tensor ``t`` becomes a runtime scalar: its
        value is neither fixed (``tensor_scalar``) nor given in ``values``
        (``to_dnnc(values)`` compiles given values in)."""
        return self.runtime and t._value is None and t.get_uid() not in self.values

    @staticmethod
    def _one_element(t, what):
        numel = 1
        for d in t._dim:
            numel *= d
        if numel != 1:
            raise InvalidGraphError(f"{what}: pass-by-value tensor '{t.get_name()}': expected "
                                    f"one element, got dims {t._dim}")

    # -- the whole graph -------------------------------------------------------

    def run(self):
        """Lower every node, then ``finish``. dnnc's errors come out as the
        frontend's (``cudnnGraphNotSupportedError``, ``InvalidGraphError``)."""
        try:
            for node in self.fgraph._nodes:
                made = node.lower(self, node)
                for t, d in zip(node.outputs, made):
                    if t is not None and d is not None:
                        self.tensors[id(t)] = d
                    elif t is not None and not t.get_is_virtual():
                        raise InvalidGraphError(f"{node.op} '{node.name}': output "
                                                f"'{t.get_name()}' is not made in this form of "
                                                "the op (e.g. statistics in inference)")
            self.finish()
        except (cudnnGraphNotSupportedError, InvalidGraphError):
            raise
        except UnsupportedError as err:
            raise cudnnGraphNotSupportedError(str(err)) from err
        except (GraphError, DnncError) as err:
            if type(err).__name__ == "LoweringError":
                raise
            raise InvalidGraphError(str(err)) from err
        return self

    def finish(self):
        layouts = {id(t): d.get_stride() for t, d in self.inputs}
        for node in self.fgraph._nodes:
            for index, t in enumerate(node.outputs):
                d = self.tensors.get(id(t))
                if t is None or d is None:
                    continue
                like = _output_layout(node, index, layouts, len(d.dim))
                what = f"{node.op} '{node.name}' output '{t.get_name()}'"
                if t._user_dim and list(t._dim) != list(d.dim):
                    raise InvalidGraphError(f"{what}: dims set to {t._dim}, but the op makes "
                                            f"{list(d.dim)}")
                strides = None
                if t._user_stride:
                    strides = t._stride
                elif like is not None and len(like) == len(d.dim):
                    strides = strides_in_order_of(d.dim, like)
                if strides is not None:
                    layouts[id(t)] = strides
                # A type set on a virtual tensor converts to it, as in cuDNN
                # (identity + set_data_type is cuDNN's cast).
                dt = enums.to_dnnc(t._data_type, f"tensor '{t.get_name()}'")
                if dt is not None:
                    d.set_data_type(dt)
                if not t.get_is_virtual():
                    d.set_output(True)
                    if strides is not None:
                        d.set_stride(strides)
                    if t.get_name():
                        d.set_name(_unique_output_name(self, t, d))
                    if t._ragged_offset is not None:
                        self._offsets.add(id(t._ragged_offset))
                        d.set_ragged_offset(self.tensor(t._ragged_offset,
                                                        f"{what} ragged offset"))
        self._copy_back()

    def _copy_back(self):
        """Give frontend outputs the dims, strides and type dnnc worked out,
        where the caller did not set them."""
        for node in self.fgraph._nodes:
            for t in node.outputs:
                d = self.tensors.get(id(t))
                if t is None or d is None:
                    continue
                if not t._user_dim:
                    t._dim = list(d.dim)
                if not t._user_stride:
                    t._stride = d.get_stride()
                t._inferred_type = enums.library_type(d.get_data_type())

    def output_type(self, t, d):
        """The dnnc type frontend tensor ``t`` is to have, as dnnc.Graph would
        resolve it (see dnnc/graph.py) were ``t`` made directly: its own,
        else for an output the graph's io type or ``d``'s operands' float
        type, else None (a virtual tensor: the intermediate type)."""
        if t is None:
            return None
        dt = enums.to_dnnc(t._data_type, f"tensor '{t.get_name()}'")
        if dt is not None or t.get_is_virtual():
            return dt
        if self.graph.io_data_type is not None:
            return self.graph.io_data_type
        node, _ = d.producer
        for v in node.operands.values():
            for x in v if isinstance(v, list) else [v]:
                if x is not None and x.get_data_type().is_float:
                    return x.get_data_type()
        return None

    def dnnc_of(self, t):
        return self.tensors.get(id(t))


def _unique_output_name(ctx, t, d):
    name = t.get_name()
    taken = {x.name for x in ctx.graph.inputs} | {x.name for x in ctx.graph.outputs if x is not d}
    return name if name not in taken else f"{name}_{t.get_uid()}"


# Outputs whose layout cuDNN does not take from the op's first input: sdpa's
# statistics are packed [B, H, S, 1] whatever q's layout; each gradient of
# sdpa_backward takes the layout of its own input (dQ of q, dK of k, dV of v).
# An entry of None means packed in index order.
_OUTPUT_LIKE = {("sdpa", 1): None, ("sdpa_backward", 0): "q", ("sdpa_backward", 1): "k",
                ("sdpa_backward", 2): "v"}


def _output_layout(node, index, layouts, rank):
    """The strides whose order output ``index`` of ``node`` takes when the
    caller did not set its strides, or None for dnnc's own (a matmul's)."""
    if (node.op, index) in _OUTPUT_LIKE:
        source = _OUTPUT_LIKE[node.op, index]
        if source is None:
            return list(range(rank, 0, -1))
        t = node.inputs.get(source)
        return layouts.get(id(t)) if t is not None else None
    if node.op == "matmul":
        return None
    return _first_layout(node, layouts)


def _first_layout(node, layouts):
    """cuDNN gives an output whose strides the caller did not set the stride
    order of its op's first tensor input (channels-last in, channels-last
    out), through virtual tensors too. The strides of that input, or None."""
    for value in node.inputs.values():
        for t in value if isinstance(value, list) else [value]:
            if t is not None and id(t) in layouts:
                return layouts[id(t)]
    return None


def strides_in_order_of(dims, like):
    """Packed strides for ``dims`` whose order (outermost to innermost)
    is that of the strides ``like``: dims sorted by stride, larger first,
    ties kept in index order."""
    order = sorted(range(len(dims)), key=lambda i: (-like[i], i))
    strides = [0] * len(dims)
    step = 1
    for i in reversed(order):
        strides[i] = step
        step *= max(int(dims[i]), 1)
    return strides

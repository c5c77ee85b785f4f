"""``Graph``: cudnn-frontend's convenience wrapper around ``pygraph``.

    with cudnn.Graph(io_data_type=cudnn.data_type.HALF,
                     inputs=["mm::A", "mm::B", "bias::bias"],
                     outputs=["bias::OUT_0"]) as graph:
        c = graph.bias(name="bias", input=graph.matmul(name="mm", A=a, B=b), bias=d)
        c.set_output(True)
    c_out = graph(a, b, d)                    # positional, in the order of inputs=
    result = graph({"mm::A": a, ...})         # or by name; missing outputs allocated

Inside the ``with`` block every op is the ``pygraph`` op, except that an
array argument (a torch tensor, anything with DLPack, a NumPy array) is
turned into a graph tensor with ``tensor_like`` (once per array) and that
each op gets a name (``<op>.<n>`` unless given). Inputs are then known as
``<op name>::<argument>`` and outputs as their tensor's name
(``<op name>::<label>``, as pygraph names them) or ``<op name>::<i>``.
Leaving the block builds the graph (validate through build_plans);
``set_io_tuples`` fixes the order of positional calls. Calling the graph
executes it, allocating the outputs not given: torch tensors on the device
the plan runs on (NumPy arrays when torch is absent).
"""

from dnnc.frontend.enums import heur_mode
from dnnc.frontend.errors import InvalidGraphError, InvalidVariantPackError
from dnnc.frontend.pygraph import pygraph
from dnnc.frontend.tensor import tensor as Tensor

# pygraph methods used as they are, and those the wrapper runs itself.
_PASS = {"get_workspace_size", "get_workspace_size_plan_at_index", "serialize", "deserialize",
         "query_tensor_attributes_of_uid", "to_mlir", "to_dnnc", "describe_plan",
         "get_plan_name_at_index"}
_BLOCKED = {"build", "build_operation_graph", "build_plan_at_index", "build_plans",
            "check_support", "create_execution_plan", "create_execution_plans", "execute",
            "execute_plan_at_index", "validate", "populate_cuda_graph", "update_cuda_graph"}


def _is_array(obj):
    return hasattr(obj, "__dlpack__") or hasattr(obj, "__array_interface__")


class Graph:
    """See the module docstring."""

    def __init__(self, *, handle=None, inputs=None, outputs=None, heuristics=None,
                 workspace_alloc=True, **pygraph_args):
        for what, value in (("inputs", inputs), ("outputs", outputs),
                            ("heuristics", heuristics)):
            if value is not None and not isinstance(value, (list, tuple)):
                raise InvalidGraphError(f"Graph {what}: expected a list or tuple, got "
                                        f"{type(value).__name__}")
        self._args = pygraph_args
        self._handle = None if handle == "auto" else handle
        self._heuristics = list(heuristics or [heur_mode.A, heur_mode.FALLBACK])
        self._io = (list(inputs or []), list(outputs or []))
        self._graph = None
        self._arrays = {}           # id(array) -> (array, graph tensor)
        self._inputs = {}           # "<op>::<argument>" -> graph tensor
        self._outputs = {}          # output name -> graph tensor
        self._made = []             # tensors made with tensor / tensor_like directly
        self._count = {}
        self._order = None          # (input tensors, output tensors) of positional calls

    def __enter__(self):
        if self._graph is not None:
            raise InvalidGraphError("Graph: the graph was already built")
        self._graph = pygraph(**({"handle": self._handle} if self._handle else {}),
                              **self._args)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._graph = None
            return False
        g = self._graph
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans(self._heuristics)
        g.check_support()
        g.build_plans()
        if self._io[0] or self._io[1]:
            self.set_io_tuples(*self._io)
        return False

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._graph is None:
            raise InvalidGraphError(f"Graph.{name}: expected to be inside the 'with' block")
        attr = getattr(self._graph, name)
        if name in _PASS or not callable(attr):
            return attr
        if name in _BLOCKED:
            raise InvalidGraphError(f"Graph.{name}: the wrapper runs the graph's lifecycle "
                                    "itself; use pygraph for this call")
        if name in ("tensor", "tensor_like"):
            def make(*args, **kwargs):
                t = attr(*args, **kwargs)
                self._made.append(t)
                return t
            return make
        return self._op(name, attr)

    def _op(self, op, method):
        def call(*args, **kwargs):
            n = self._count.get(op, 0)
            self._count[op] = n + 1
            node = kwargs.setdefault("name", f"{op}.{n}")
            args = [self._argument(f"{node}::{i}", a) for i, a in enumerate(args)]
            kwargs = {k: v if k == "name" else self._argument(f"{node}::{k}", v)
                      for k, v in kwargs.items()}
            result = method(*args, **kwargs)
            results = result if isinstance(result, (list, tuple)) else [result]
            for i, t in enumerate(results):
                if isinstance(t, Tensor):
                    self._outputs[t.get_name() or f"{node}::{i}"] = t
            return result
        return call

    def _argument(self, key, value):
        """A graph tensor for an array argument; tuples (sdpa's dropout) by element."""
        if isinstance(value, tuple):
            return tuple(self._argument(f"{key}::{j}", v) for j, v in enumerate(value))
        if _is_array(value) and not isinstance(value, Tensor):
            known = self._arrays.get(id(value))
            if known is None:
                known = self._arrays[id(value)] = (value, self._graph.tensor_like(value))
            value = known[1]
        if isinstance(value, Tensor):
            self._inputs[key] = value
        return value

    # -- I/O order and calls --------------------------------------------------------

    def set_io_tuples(self, inputs, outputs):
        """The order of positional calls: each entry a name (``mm::A``), the
        array given to the op, or a graph tensor."""
        if self._graph.get_execution_plan_count() == 0:
            self._io = (list(inputs), list(outputs))   # applied when the block ends
            return
        ins = [self._find(x, self._inputs, "input") for x in inputs]
        outs = [self._find(x, self._outputs, "output") for x in outputs]
        for t in ins:
            if t.get_is_virtual():
                raise InvalidGraphError(f"set_io_tuples: input '{t.get_name()}' is virtual")
        given = {id(t) for t in ins + outs}
        for name, t in list(self._inputs.items()) + list(self._outputs.items()):
            if not t.get_is_virtual() and not t.get_is_pass_by_value() and id(t) not in given:
                raise InvalidGraphError(f"set_io_tuples: tensor {name} is an input or output "
                                        "of the graph but not listed")
        self._order = (ins, outs)

    def _find(self, key, table, role):
        if isinstance(key, Tensor):
            return key
        if isinstance(key, str):
            if key in table:
                return table[key]
            for t in table.values():
                if t.get_name() == key:
                    return t
        elif id(key) in self._arrays:
            return self._arrays[id(key)][1]
        raise InvalidGraphError(f"set_io_tuples: {role} {key!r} is not a tensor of this graph")

    def __call__(self, *args, handle=None, workspace=None):
        if self._graph is None or self._graph.get_execution_plan_count() == 0:
            raise InvalidGraphError("Graph: call it after the 'with' block has built it")
        handle = handle if handle is not None else self._handle
        if len(args) == 1 and isinstance(args[0], dict):
            return self._call_by_name(dict(args[0]), handle)
        if self._order is None:
            raise InvalidGraphError("Graph: positional calls need set_io_tuples (or inputs= "
                                    "and outputs=)")
        ins, outs = self._order
        if len(args) != len(ins):
            raise InvalidVariantPackError(f"Graph: expected {len(ins)} inputs, got {len(args)}")
        made = [self._empty_like(t) for t in outs]
        pack = dict(zip(ins, args))
        pack.update(zip(outs, made))
        self._graph.execute(pack, workspace, handle=handle)
        return made[0] if len(made) == 1 else tuple(made)

    def _call_by_name(self, tensors, handle):
        pack, missing = {}, []
        for name, t in list(self._inputs.items()) + list(self._outputs.items()):
            if t in pack or t.get_is_virtual():
                continue
            if name in tensors:
                pack[t] = tensors[name]
            elif t.get_name() in tensors:
                pack[t] = tensors[t.get_name()]
            elif name in self._outputs:
                pack[t] = tensors[name] = self._empty_like(t)
            elif not t.get_is_pass_by_value() or t.get_has_compile_time_constant():
                array = next((a for a, g in self._arrays.values() if g is t), None)
                if array is None:
                    missing.append(name)
                else:
                    pack[t] = array
        if missing:
            raise InvalidVariantPackError(f"Graph: inputs not given: {', '.join(missing)}")
        self._graph.execute(pack, None, handle=handle)
        return tensors

    def _empty_like(self, t):
        """A new output buffer for ``t``: its dims, strides and type, on the
        device the plan runs on."""
        from dnnc.frontend.enums import to_dnnc
        from dnnc.frontend.pygraph import default_target

        dt = to_dnnc(t.get_data_type(), f"tensor '{t.get_name()}'")
        try:
            import torch
        except ImportError:
            import numpy as np

            return np.empty(t.get_dim(), dtype=dt.numpy)
        device = "cuda" if (self._graph.target or default_target()) == "cuda" else "cpu"
        torch_dtype = getattr(torch, {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
                                      "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2",
                                      "i1": "bool", "i32": "int32", "si8": "int8",
                                      "ui8": "uint8"}[dt.mlir])
        return torch.empty_strided(t.get_dim(), t.get_stride(), dtype=torch_dtype,
                                   device=device)

"""``torch.compile(model, backend="dnnc")``.

    import torch
    model = torch.compile(model, backend="dnnc")          # training works too
    model = torch.compile(model, backend="dnnc", options={"fallback": "eager"})

Dynamo captures the model's graph; AOTAutograd (``aot_autograd``) turns it
into ATen graphs, the forward and (for training) the backward, and hands
each to ``compile_aten``:

1. partition.propose splits the graph into maximal regions dnnc takes and
   the ops it does not (each with its reason);
2. each region is lowered to one dnnc graph and compiled (compiled.py) for
   the device of its tensors: dnnc's fusion sees the region whole. A region
   dnnc fails to compile stays in torch, with the error as its reason;
3. each compiled region replaces its nodes by one ``dnnc::compiled_region``
   call;
4. the rest of the graph, with those calls in it, is compiled by Inductor
   (``compile_fx_inner``), or run as it is (``"eager"``) where Inductor is
   not available for the device, or where ``options={"fallback": "eager"}``
   asks. Nothing is dropped and no op raises for being unsupported.

Options (``torch.compile(..., options={...})``): ``fallback``: ``"inductor"``
(default where available) or ``"eager"``; ``report``: a list to which each
compiled graph's ``GraphReport`` is appended (explain.py reads it).

The backend is registered with Dynamo as "dnnc" by the ``torch_dynamo_backends``
entry point (pyproject.toml) and on ``import dnnc.torch``.
"""

import functools
import operator
import shutil
import warnings
from dataclasses import dataclass, field

import torch
import torch.fx.passes.tools_common
from torch._dynamo.backends.common import aot_autograd
from torch._guards import detect_fake_mode

from dnnc.errors import DnncError
from dnnc.torch import aliases, aten_map, aten_nn, partition
from dnnc.torch.compiled import CompiledRegion, run_region

FALLBACKS = ("inductor", "eager")
REGION_OP = torch.ops.dnnc.compiled_region.default


@dataclass
class RegionReport:
    """A region dnnc runs: its ATen ops (node name, op) and its plan's
    kernels ((name, strategy and config, reason), filled by explain)."""

    name: str
    ops: list
    region: object = None
    kernels: list = field(default_factory=list)


@dataclass
class GraphReport:
    """What became of one ATen graph (``kind``: "forward", "backward" or
    "inference"): the regions dnnc runs, each op left to torch with the
    reason ((node name, op, reason)), and what ran the rest."""

    kind: str
    regions: list = field(default_factory=list)
    fallbacks: list = field(default_factory=list)
    residual: str = ""


def inductor_available(device_type):
    """Whether Inductor can compile for ``device_type`` here: Triton for
    CUDA, a C++ compiler for the CPU."""
    try:
        import torch._inductor.compile_fx  # noqa: F401
    except ImportError:
        return False
    if device_type == "cuda":
        from torch.utils._triton import has_triton

        return has_triton()
    return any(shutil.which(cc) for cc in ("g++", "c++", "clang++"))


def _device_of(values):
    """The device of the first tensor of ``values`` (CPU when there is none)."""
    for value in values:
        if isinstance(value, (tuple, list)):
            value = next((v for v in value if isinstance(v, torch.Tensor)), None)
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def compile_aten(gm, example_inputs, *, kind, fallback=None, report=None):
    """The AOTAutograd compiler of the backend: ``gm`` (an ATen graph) with
    its regions run by dnnc and the rest by ``fallback``; returns a function
    of a list of inputs (the boxed convention)."""
    device = _device_of(list(example_inputs) + [n.meta.get("val") for n in gm.graph.nodes])
    record = GraphReport(kind)
    regions, refused = partition.propose(gm, device.type)
    for i, nodes in enumerate(regions):
        name = f"{kind}_region{i}"
        outputs = aliases.plan(nodes, partition.outputs_of(nodes))
        try:
            region = CompiledRegion(name, nodes, outputs.outputs,
                                    _device_of(n.meta.get("val") for n in nodes))
        except (DnncError, TypeError, ValueError, IndexError, KeyError) as err:
            # The region stays in torch, whatever refused it (aten_map.support
            # tried each op alone; a region can still fail as a whole).
            for node in nodes:
                refused[node] = f"region '{name}' did not compile: {type(err).__name__}: {err}"
            continue
        _replace(gm, nodes, outputs, region, example_inputs)
        record.regions.append(RegionReport(name, [(n.name, aten_map.op_name(n)) for n in nodes
                                                  if n.target is not operator.getitem],
                                           region))
    record.fallbacks = [(n.name, aten_map.op_name(n), why) for n, why in refused.items()
                        if n.target is not operator.getitem and n.graph is gm.graph]
    torch.fx.passes.tools_common.legalize_graph(gm)
    gm.graph.lint()
    gm.recompile()
    compiled, record.residual = _compile_residual(gm, example_inputs, device, fallback, kind)
    if report is not None:
        report.append(record)
    return compiled


def _replace(gm, nodes, outputs, region, example_inputs):
    """Put one dnnc::compiled_region call in place of ``nodes``, and the
    views ``outputs`` (an aliases.Plan) rebuilds after it."""
    graph = gm.graph
    fake_mode = detect_fake_mode(example_inputs)
    with graph.inserting_before(nodes[0]):
        call = graph.call_function(REGION_OP,
                                   (region.key, list(region.input_nodes)))
        picks = [graph.call_function(operator.getitem, (call, i))
                 for i in range(len(outputs.outputs))]
    fakes = None
    if fake_mode is not None:
        with fake_mode:
            fakes = region.fake(None)
        call.meta["val"] = fakes
    made = {}
    for i, (old, new) in enumerate(zip(outputs.outputs, picks)):
        new.meta["val"] = fakes[i] if fakes is not None else old.meta.get("val")
        made[old] = new
    with graph.inserting_before(nodes[0]):
        views = [(old, _view(graph, made, old, root, steps, fake_mode))
                 for old, root, steps in outputs.views]
    for old, new in list(made.items()) + views:
        old.replace_all_uses_with(new)
    for old, value in partition.constants_of(nodes).items():
        for user in list(old.users):
            user.args = torch.fx.node.map_arg(user.args, lambda a: value if a is old else a)
            user.kwargs = torch.fx.node.map_arg(user.kwargs,
                                                lambda a: value if a is old else a)
    for node in reversed(nodes):
        graph.erase_node(node)


def _view(graph, made, node, root, steps, fake_mode):
    """A node of ``graph`` computing ``node`` as a view of ``root`` (its new
    node in ``made``, else itself): ``steps`` replayed, or one as_strided of
    node's traced geometry (aliases.Plan)."""
    env = {root: made.get(root, root)}
    if steps is None:
        val = node.meta["val"]
        new = [graph.call_function(aliases.AS_STRIDED,
                                   (env[root], list(val.shape), list(val.stride()),
                                    val.storage_offset()))]
    else:
        new = []
        for step in steps:
            env[step] = graph.node_copy(step, lambda a: env.get(a, a))
            new.append(env[step])
    for n in new:
        if fake_mode is None:
            n.meta["val"] = node.meta.get("val") if n is new[-1] else None
            continue
        # The view of the region's fake output, so that its meta aliases it.
        args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: a.meta.get("val"))
        with fake_mode:
            n.meta["val"] = n.target(*args, **kwargs)
    return new[-1]


def _compile_residual(gm, example_inputs, device, fallback, kind):
    """(boxed function, what runs the rest) for ``gm``, whose regions are dnnc calls."""
    rest = [n for n in gm.graph.nodes if n.op == "call_function"
            and n.target not in (REGION_OP, operator.getitem)]
    if not rest:
        return _run_directly(gm), "nothing (every op runs in dnnc)"
    if all(getattr(n.target, "is_view", False) for n in rest):
        # Views of the regions' outputs (aliases.py): nothing to compile.
        return _run_directly(gm), f"eager torch ({len(rest)} views)"
    fallback = fallback or ("inductor" if inductor_available(device.type) else "eager")
    if fallback not in FALLBACKS:
        raise ValueError(f"dnnc backend option fallback: expected one of "
                         f"{', '.join(FALLBACKS)}, got {fallback!r}")
    if fallback == "inductor":
        from torch._inductor.compile_fx import compile_fx_inner

        _as_inductor_takes(gm)
        try:
            compiled = compile_fx_inner(gm, example_inputs, is_backward=kind == "backward",
                                        is_inference=kind == "inference")
            return compiled, f"Inductor ({len(rest)} ops)"
        except Exception as err:   # Inductor's own failure: the graph still runs
            warnings.warn(f"dnnc backend: Inductor failed on the ops dnnc does not take "
                          f"({type(err).__name__}: {err}); running them eagerly",
                          RuntimeWarning, stacklevel=2)
    return _run_directly(gm), f"eager torch ({len(rest)} ops)"


def _run_directly(gm):
    """``gm`` as a boxed function run by Python, its regions called as
    ``compiled.run_region`` instead of through torch's dispatch of
    dnnc::compiled_region: in a graph nothing else compiles, the custom
    op's dispatch (its autograd and aliasing checks, the tensor lists
    converted both ways) costs more host time than the region's own call
    (docs/torch.md, "Host time of a step")."""
    from functorch.compile import make_boxed_func

    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is REGION_OP:
            node.target = run_region
            changed = True
    if changed:
        gm.recompile()
    return make_boxed_func(gm.forward)


def _as_inductor_takes(gm):
    """Rewrite the ops of ``gm`` that compile_fx_inner expects decomposed:
    the graphs AOTAutograd hands dnnc keep ``aten.t`` (dnnc maps it: see
    _decompositions), and Inductor, which decomposes it in its own
    pipeline, refuses to lower it ("both a fallback and a decomp for same
    op"). A view of a region's output rebuilt in the residual (a linear
    layer's transposed weight saved for the backward) is such an op; it
    becomes the permute it is."""
    t = torch.ops.aten.t.default
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not t:
            continue
        source = node.args[0]
        value = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
        rank = value.dim() if isinstance(value, torch.Tensor) else None
        if rank is None:
            continue
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(torch.ops.aten.permute.default,
                                         (source, [1, 0] if rank == 2 else list(range(rank))))
        new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()


def _decompositions():
    """Core ATen decompositions of the ops dnnc does not map, so that the
    pieces of such an op can still reach dnnc; the ops it maps are kept."""
    from torch._decomp import core_aten_decompositions

    return {op: fn for op, fn in core_aten_decompositions().items()
            if op not in aten_map.TABLE}


def _partition(joint, joint_inputs, *args, **kwargs):
    """AOTAutograd's default partition of a training step's joint graph,
    once max pooling's backward reads the forward's input instead of its
    indices (aten_nn.backward_from_input), so that neither graph needs
    them."""
    from torch._functorch.partitioners import default_partition

    if aten_nn.backward_from_input(joint.graph):
        joint.recompile()
    return default_partition(joint, joint_inputs, *args, **kwargs)


def dnnc_backend(gm, example_inputs, options=None):
    """The Dynamo backend: ``torch.compile(model, backend=dnnc_backend)``
    (registered as "dnnc"). ``options``: see the module docstring."""
    options = dict(options or {})
    unknown = set(options) - {"fallback", "report"}
    if unknown:
        raise ValueError(f"dnnc backend: unknown option {sorted(unknown)[0]!r}: expected "
                         "fallback or report")
    common = dict(fallback=options.get("fallback"), report=options.get("report"))
    forward = functools.partial(compile_aten, kind="forward", **common)
    backward = functools.partial(compile_aten, kind="backward", **common)
    inference = functools.partial(compile_aten, kind="inference", **common)
    return aot_autograd(fw_compiler=forward, bw_compiler=backward,
                        inference_compiler=inference, partition_fn=_partition,
                        decompositions=_decompositions())(gm, example_inputs)


def register():
    """Make "dnnc" name ``dnnc_backend`` for Dynamo, unless an installed
    package's ``torch_dynamo_backends`` entry point already does (Dynamo
    loads that itself, and refuses a name registered twice)."""
    from torch._dynamo.backends import registry

    registry._lazy_import()   # discovers the entry points
    if "dnnc" in registry._COMPILER_FNS or registry._BACKENDS.get("dnnc") is not None:
        return
    registry.register_backend(dnnc_backend, name="dnnc")

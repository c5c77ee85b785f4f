"""Region outputs that are views of other tensors, handed to torch as views.

An ATen graph returns views: AOTAutograd saves for the backward ``q``, ``k``
and ``v`` as the transposes of slices of the qkv projection's output, a
linear layer's weight as ``t(w)``, the layernorm's output as a ``view`` to
``[B * T, C]``. A compiled region's outputs are buffers of their own
(``dnnc::compiled_region`` may not return aliases of its inputs or of each
other), so a view read outside the region used to be a copy made by dnnc.

    plan = aliases.plan(nodes, outputs)
    plan.outputs     # what the region computes: each storage once
    plan.views       # (node, root, steps): node rebuilt outside from root

Outputs are grouped by the storage their example values share (the FakeTensors
of the trace alias as the real tensors do). A group keeps one region output,
its root: a value of the group that covers the storage densely in the layout
dnnc stores it (lowering.layout_of, from offset 0): the projection's output,
the layernorm's, the attention's o as ``[B, S, H, D]``. Every other output of
the group is rebuilt outside the region from the root, by the ATen view ops
that made it from the root (replayed), or by ``as_strided`` with its traced
dims, strides and offset where no chain of view ops leads from the root to
it (o as the ``[B, H, S, D]`` that the attention returned). A view of a
tensor the region reads (a weight's ``t``) is replayed on that tensor and
is no output at all. What fits neither stays an output (a copy), as before.

The views then cost nothing: they run in the residual graph (Inductor's
``reinterpret_tensor``, or eagerly), and the backward graph reads them with
the strides they were traced with (lowering.input_layout), so that the
attention backward reads q, k and v inside the projection's buffer.
"""

import operator
from dataclasses import dataclass, field

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from dnnc.torch.lowering import layout_of

AS_STRIDED = torch.ops.aten.as_strided.default
RESHAPES = {torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default,
            torch.ops.aten.reshape.default}


@dataclass
class Plan:
    """``outputs``: the nodes the region returns, in graph order; ``views``:
    (node, root, steps) for each output rebuilt outside the region from
    ``root`` (a region output or a node outside the region): ``steps`` are
    the view nodes to replay from root to node, in order, or None for one
    ``as_strided`` of node's traced geometry."""

    outputs: list
    views: list = field(default_factory=list)


def _tensor(node):
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _storage(val):
    try:
        return StorageWeakRef(val.untyped_storage())
    except (RuntimeError, NotImplementedError):
        return None


def _is_view(node):
    """True when ``node`` makes a view of its first argument (a getitem of a
    view op's list of views counts)."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        producer = node.args[0]
        return isinstance(producer, torch.fx.Node) and _is_view(producer)
    return bool(getattr(node.target, "is_view", False))


def _dense_root(val):
    """True when ``val`` holds its whole storage from offset 0, laid out as
    dnnc stores a tensor of its dims (layout_of): a region output of it
    holds every element its views read."""
    if val.storage_offset() != 0 or val.numel() == 0:
        return False
    if val.numel() * val.element_size() != val.untyped_storage().nbytes():
        return False
    return all(n == 1 or a == b for n, a, b in zip(val.shape, val.stride(), layout_of(val)))


def _rank(node):
    """Which root of a group to prefer: an op that computes (0), then data
    movement other than a reshape (1: a transpose whose result dnnc's
    attention writes in place), then a reshape (2: a copy when it is a
    graph output)."""
    if not _is_view(node):
        return 0
    return 2 if node.target in RESHAPES else 1


def chain(node, root):
    """The view nodes from ``root`` (exclusive) to ``node`` (inclusive), in
    order, each a view of the one before: None where ``node`` is not made
    from ``root`` by view ops alone."""
    steps = []
    while node is not root:
        if not _is_view(node):
            return None
        steps.insert(0, node)
        node = node.args[0]
        if not isinstance(node, torch.fx.Node):
            return None
    return steps


def plan(nodes, outputs):
    """The Plan (module docstring) of the region of ``nodes`` whose values
    ``outputs`` are read outside it."""
    inside = set(nodes)
    groups = {}
    for node in outputs:
        val = _tensor(node)
        key = None if val is None else _storage(val)
        groups.setdefault(key if key is not None else node, []).append(node)
    outside = [a for n in nodes for a in n.all_input_nodes if a not in inside]
    keep, views = set(), []
    for key, members in groups.items():
        if not isinstance(key, StorageWeakRef):
            keep.update(members)
            continue
        dtype = _tensor(members[0]).dtype
        # A tensor the region reads: its views are replayed on it.
        read = next((a for a in outside if _tensor(a) is not None and
                     _storage(_tensor(a)) == key), None)
        rest = []
        for node in members:
            steps = None if read is None else chain(node, read)
            if steps:
                views.append((node, read, steps))
            else:
                rest.append(node)
        if not rest:
            continue
        candidates = [n for n in nodes if _tensor(n) is not None and
                      _storage(_tensor(n)) == key and _tensor(n).dtype == dtype and
                      _dense_root(_tensor(n))]
        if not candidates or any(_tensor(n).dtype != dtype for n in rest):
            keep.update(rest)
            continue
        order = {n: i for i, n in enumerate(nodes)}
        root = min(candidates, key=lambda n: (_rank(n), n not in rest, order[n]))
        keep.add(root)
        for node in rest:
            if node is not root:
                views.append((node, root, chain(node, root)))
    return Plan([n for n in outputs if n in keep] +
                [n for n in nodes if n in keep and n not in outputs], views)

"""dnn-fuse: outline each kernel-to-be into a private function.

The dnn ops of a graph function (the one marked ``dnn.graph``, else every public
function that is not a kernel) are split into groups; each group becomes a
``func.func private @<graph>_k<N>_<anchor>`` marked ``dnn.kernel`` and
``dnn.anchor = "<anchor>"``, and the graph function keeps only ``func.call``s.

Grouping, in program order:

* anchors start a kernel of their own, named after the op: matmul, conv_fprop,
  conv_dgrad, conv_wgrad, sdpa, sdpa_backward, every norm and norm backward,
  softmax and log_softmax (and their backward), reduction, pooling,
  pooling_backward, concat (and any other non-pointwise op);
* epilogue (option ``epilogue``): a pointwise op (cast included) joins a matmul,
  conv, softmax or log_softmax kernel when it uses the kernel's chain tip (the
  anchor's result, then the last op that joined) and is that value's only user.
  Its other operands (bias, residual) become kernel arguments;
* prologue (option ``prologue``): an ``add`` whose result feeds a layernorm or
  rmsnorm as x and is otherwise only returned joins the norm's kernel;
* other pointwise ops join the pointwise kernels of their operands (one kernel
  per connected chain), else start one (anchor "pointwise");
* reshape, transpose and slice get one kernel each (anchor "tensor");
* ``dnn.constant``s are cloned into every kernel that uses them.

A join that would make two kernels depend on each other is refused. A kernel
returns exactly the values used outside it; calls are emitted in a topological
order of the kernels, which is also the numbering.

Before::

    func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>)
        -> tensor<8x32xf32> attributes {dnn.graph} {
      %0 = "dnn.matmul"(%x, %w) {compute_type = f32} : ...
      %1 = "dnn.add"(%0, %b) : ...
      %2 = "dnn.gelu"(%1) {approximate = "none"} : ...
      return %2 : tensor<8x32xf32>
    }

After::

    func.func private @main_k0_matmul(%arg0: tensor<8x16xf32>, %arg1: tensor<16x32xf32>,
        %arg2: tensor<32xf32>) -> tensor<8x32xf32>
        attributes {dnn.anchor = "matmul", dnn.kernel} {
      %0 = "dnn.matmul"(%arg0, %arg1) {compute_type = f32} : ...
      %1 = "dnn.add"(%0, %arg2) : ...
      %2 = "dnn.gelu"(%1) {approximate = "none"} : ...
      return %2 : tensor<8x32xf32>
    }
    func.func @main(...) -> tensor<8x32xf32> attributes {dnn.graph} {
      %0 = call @main_k0_matmul(%arg0, %arg1, %arg2) : (...) -> tensor<8x32xf32>
      return %0 : tensor<8x32xf32>
    }

Lit test: test/lit/passes/dnn_fuse.mlir.
"""

import heapq
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import func

from dnnc.dialect.ops_pointwise import POINTWISE_OPS
from dnnc.errors import UnsupportedError
from dnnc.passes import DnncPass, register

POINTWISE = set(POINTWISE_OPS) | {"cast", "constant"}
TENSOR = {"reshape", "transpose", "slice"}
EPILOGUE_ANCHORS = {"matmul", "conv_fprop", "conv_dgrad", "conv_wgrad", "softmax", "log_softmax"}
PROLOGUE_NORMS = {"layernorm", "rmsnorm"}


@dataclass(eq=False)
class Group:
    """The ops of one kernel-to-be."""

    anchor: str  # the dnn.anchor of the kernel: an op name, "pointwise" or "tensor"
    ops: list = field(default_factory=list)
    tip: object = None  # the value an epilogue may extend; None when closed


def _kind(op):
    return op.name[4:]


def _producer(value):
    """The operation defining ``value``; None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _users(value):
    """The distinct operations using ``value``, in use order."""
    return list(dict.fromkeys(u.owner.operation for u in value.uses))


def _is_constant(op):
    return op is not None and op.name == "dnn.constant"


class Partition:
    """Splits one block's dnn ops into Groups; see the module docstring."""

    def __init__(self, ops, epilogue=True, prologue=True):
        self.group_of = {}
        self.producers = {}  # op -> the ops defining its operands (None: an argument)
        self.groups = []
        self.epilogue = epilogue
        self.prologue = prologue
        self.prologue_adds = self._prologue_adds(ops) if prologue else set()
        for op in ops:
            self._place(op)

    # -- dependencies between groups ----------------------------------------

    def _source(self, value):
        """The group producing ``value``; None for arguments and constants."""
        op = _producer(value)
        return None if op is None or _is_constant(op) else self.group_of.get(op)

    def _deps(self, groups, extra=()):
        """The groups outside ``groups`` that the ops of ``groups`` and ``extra`` read."""
        out = {}
        for op in [o for g in groups for o in g.ops] + list(extra):
            if op not in self.producers:  # cached: the bindings' calls are slow
                self.producers[op] = [_producer(v) for v in op.operands]
            for p in self.producers[op]:
                g = self.group_of.get(p) if not _is_constant(p) else None
                if g is not None and g not in groups:
                    out[g] = None
        return list(out)

    def _reaches(self, start, targets):
        """True when ``start`` depends, through any chain of groups, on one of ``targets``."""
        seen, todo = set(), [start]
        while todo:
            g = todo.pop()
            for d in self._deps([g]):
                if d in targets:
                    return True
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return False

    def _legal(self, members, op):
        """Can ``op`` and the groups ``members`` form one kernel without a cycle?"""
        return not any(self._reaches(d, members) for d in self._deps(members, [op]))

    # -- placing ops ---------------------------------------------------------

    def _prologue_adds(self, ops):
        adds = set()
        for op in ops:
            if _kind(op) not in PROLOGUE_NORMS:
                continue
            x = op.operands[0]
            add = _producer(x)
            if add is None or add.name != "dnn.add":
                continue
            if all((u.owner.operation == op and u.operand_number == 0)
                   or u.owner.operation.name == "func.return" for u in x.uses):
                adds.add(add)
        return adds

    def _add(self, group, op):
        group.ops.append(op)
        self.group_of[op] = group

    def _new(self, anchor, op):
        group = Group(anchor)
        self.groups.append(group)
        self._add(group, op)
        return group

    def _place(self, op):
        kind = _kind(op)
        if kind == "constant":
            # Cloned into its users' kernels; a kernel of its own only when returned.
            if any(not u.name.startswith("dnn.") for u in _users(op.results[0])):
                self._new("pointwise", op)
        elif kind in POINTWISE:
            if not self._join_epilogue(op) and op not in self.prologue_adds:
                self._join_pointwise(op)
        elif kind in TENSOR:
            self._new("tensor", op)
        else:
            group = Group(kind)
            self.groups.append(group)
            x = op.operands[0] if kind in PROLOGUE_NORMS else None
            if x is not None and _producer(x) in self.prologue_adds \
                    and _producer(x) not in self.group_of:
                self._add(group, _producer(x))
            self._add(group, op)
            if kind in EPILOGUE_ANCHORS:
                group.tip = op.results[0]

    def _join_epilogue(self, op):
        if not self.epilogue:
            return False
        for v in op.operands:
            group = self._source(v)
            if (group is not None and group.tip is not None and group.tip == v
                    and _users(v) == [op] and self._legal([group], op)):
                self._add(group, op)
                group.tip = op.results[0]
                return True
        return False

    def _join_pointwise(self, op):
        candidates = []
        for v in op.operands:
            g = self._source(v)
            if g is not None and g.anchor == "pointwise" and g not in candidates:
                candidates.append(g)
        members = []
        for g in candidates:
            if self._legal(members + [g], op):
                members.append(g)
        if not members:
            self._new("pointwise", op)
            return
        into = members[0]
        for g in members[1:]:
            for o in g.ops:
                self._add(into, o)
            self.groups.remove(g)
        self._add(into, op)


# ----------------------------------------------------------------------------
# Outlining


def _topological(groups, partition, position):
    """Groups in dependency order, earliest first op first among the ready ones."""
    deps = {g: set(partition._deps([g])) for g in groups}
    users = {g: [] for g in groups}
    for g, ds in deps.items():
        for d in ds:
            users[d].append(g)
    key = {g: min(position[o] for o in g.ops) for g in groups}
    ready = [(key[g], i, g) for i, g in enumerate(groups) if not deps[g]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, g = heapq.heappop(ready)
        order.append(g)
        for u in users[g]:
            deps[u].discard(g)
            if not deps[u]:
                heapq.heappush(ready, (key[u], groups.index(u), u))
    assert len(order) == len(groups), "kernel groups form a cycle"
    return order


def _clone(op, mapping):
    """Re-create ``op`` at the current insertion point with operands mapped."""
    attrs = dict(op.attributes.items())
    new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                              operands=[mapping[v] for v in op.operands], attributes=attrs,
                              loc=op.location)
    for old, res in zip(op.results, new.results):
        mapping[old] = res
    return new


def _build_kernel(name, group, position, fn):
    """Create the kernel function before ``fn``; return it and its (inputs, outputs)."""
    ops = sorted(group.ops, key=position.__getitem__)
    inside = set(ops)
    inputs, outputs = {}, []
    for op in ops:
        for v in op.operands:
            p = _producer(v)
            if p not in inside and not _is_constant(p):
                inputs[v] = None
        for r in op.results:
            if any(u.owner.operation not in inside for u in r.uses):
                outputs.append(r)
    inputs = list(inputs)
    with ops[0].location:
        kernel = func.FuncOp(name, ([v.type for v in inputs], [r.type for r in outputs]),
                             visibility="private", ip=ir.InsertionPoint(fn))
        kernel.attributes["dnn.kernel"] = ir.UnitAttr.get()
        kernel.attributes["dnn.anchor"] = ir.StringAttr.get(group.anchor)
        block = kernel.add_entry_block()
        mapping = dict(zip(inputs, block.arguments))
        with ir.InsertionPoint(block):
            for op in ops:
                for v in op.operands:
                    if v not in mapping:  # a constant of the graph: cloned, not passed
                        _clone(_producer(v), mapping)
                _clone(op, mapping)
            func.ReturnOp([mapping[r] for r in outputs])
    return kernel, inputs, outputs


def graph_functions(module):
    """The functions marked dnn.graph, else the public functions that are not kernels."""
    funcs = [op.operation for op in module.regions[0].blocks[0].operations
             if op.operation.name == "func.func"]
    marked = [f for f in funcs if "dnn.graph" in f.attributes]
    if marked:
        return marked
    return [f for f in funcs if "dnn.kernel" not in f.attributes
            and ("sym_visibility" not in f.attributes
                 or ir.StringAttr(f.attributes["sym_visibility"]).value == "public")]


def fuse_function(fn, epilogue=True, prologue=True):
    """Outline the dnn ops of one function into kernels; return how many."""
    block = fn.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    dnn = [op for op in ops if op.name.startswith("dnn.")]
    if not dnn:
        return 0
    graph = ir.StringAttr(fn.attributes["sym_name"]).value
    others = [op.name for op in ops if not op.name.startswith("dnn.")
              and op.name != "func.return"]
    if others:
        raise UnsupportedError(f"dnn-fuse: function @{graph}: expected dnn ops and "
                               f"func.return only, got '{others[0]}'")
    position = {op: i for i, op in enumerate(dnn)}
    partition = Partition(dnn, epilogue, prologue)
    terminator = ops[-1]
    replaced, count = {}, 0
    for group in _topological(partition.groups, partition, position):
        name = f"{graph}_k{count}_{group.anchor}"
        kernel, inputs, outputs = _build_kernel(name, group, position, fn)
        if not outputs:  # dead ops (dnn ops are pure): no kernel
            kernel.operation.erase()
            continue
        with group.ops[0].location:
            call = func.CallOp(kernel, [replaced.get(v, v) for v in inputs],
                               ip=ir.InsertionPoint(terminator))
        for old, new in zip(outputs, call.results):
            replaced[old] = new
        count += 1
    for old, new in replaced.items():
        old.replace_all_uses_with(new)
    for op in reversed(dnn):
        op.erase()
    return count


@register
@dataclass
class DnnFuse(DnncPass):
    NAME = "dnn-fuse"
    epilogue: bool = True
    prologue: bool = True

    def run(self, module):
        for fn in graph_functions(module):
            fuse_function(fn, self.epilogue, self.prologue)

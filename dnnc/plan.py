"""The launch plan of a fused module, for people to read.

After ``dnn-fuse`` the graph function is a sequence of calls to kernels; that
sequence is the plan. ``describe`` lists each kernel with its anchor op and the
ops fused into it.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.dialect.walk import entry_function


@dataclass
class KernelInfo:
    name: str
    anchor: str
    ops: list  # dnn op names in program order

    def __str__(self):
        return f"{self.name}  [{self.anchor}]  {' -> '.join(self.ops)}"


def kernels(module):
    """The kernels the graph function calls, in launch order."""
    funcs = {ir.StringAttr(f.attributes["sym_name"]).value: f
             for f in module.body.operations if f.operation.name == "func.func"}
    graph = entry_function(module)
    out = []
    for op in graph.regions[0].blocks[0].operations:
        if op.operation.name != "func.call":
            continue
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        fn = funcs[callee]
        anchor = ""
        if "dnn.anchor" in fn.attributes:
            anchor = ir.StringAttr(fn.attributes["dnn.anchor"]).value
        ops = [o.operation.name[4:] for o in fn.regions[0].blocks[0].operations
               if o.operation.name.startswith("dnn.")]
        out.append(KernelInfo(callee, anchor, ops))
    return out


def describe(module):
    """A short table of the plan, one kernel per line."""
    ks = kernels(module)
    lines = [f"{len(ks)} kernel{'s' if len(ks) != 1 else ''}:"]
    lines += [f"  {i}. {k}" for i, k in enumerate(ks)]
    return "\n".join(lines)


@dataclass
class KernelStrategy:
    """One kernel function of a module past dnn-configure: its name, anchor
    op, code-generation strategy, the heuristics' reason (dnn.config_reason;
    "" for a kernel made after them, a layout copy or a fill) and the
    launches it makes (0 until the gpu stage has outlined them)."""

    name: str
    anchor: str
    strategy: str
    reason: str
    launches: int


def strategies(module):
    """The strategy of every configured kernel function of ``module``, in
    module order. Read after the ``gpu`` stage, ``launches`` counts the
    ``gpu.launch_func`` ops each one makes; a function that makes none (its
    loops had no iteration) is left out there."""
    from dnnc.codegen.gpu.irutil import CONFIG_ATTR, symbol
    from dnnc.dialect.walk import walk

    found = []
    for fn in module.body.operations:
        attrs = fn.attributes
        if fn.operation.name != "func.func" or CONFIG_ATTR not in attrs:
            continue
        config = ir.DictAttr(attrs[CONFIG_ATTR])
        launches = sum(1 for op in walk(fn) if op.name == "gpu.launch_func")
        found.append(KernelStrategy(
            name=symbol(fn),
            anchor=ir.StringAttr(attrs["dnn.anchor"]).value if "dnn.anchor" in attrs else "",
            strategy=ir.StringAttr(config["strategy"]).value if "strategy" in config else "",
            reason=ir.StringAttr(attrs["dnn.config_reason"]).value
            if "dnn.config_reason" in attrs else "",
            launches=launches))
    outlined = any(op.operation.name == "gpu.module" for op in module.body.operations)
    return [k for k in found if k.launches or not outlined]

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

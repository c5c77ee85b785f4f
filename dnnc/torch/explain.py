"""``dnnc.torch.explain(model, *inputs)``: what ``backend="dnnc"`` does with a model.

    report = dnnc.torch.explain(model, x)
    print(report)          # per graph: dnnc's regions (ATen ops, kernels,
                           # strategies, the heuristics' reasons) and each
                           # op left to torch with why
    report.graphs          # the GraphReports (backend.py) behind it

It compiles ``model`` afresh with the dnnc backend (``torch._dynamo.reset()``
first, as ``torch._dynamo.explain`` does, so that nothing compiled before is
reused) and runs it on ``inputs``; with ``backward=True`` it also runs a
backward pass (of the sum of the outputs), which compiles the backward
graph: the parameters' ``.grad`` change. Kernels are the compiled plan's on
CUDA, and on the CPU the plan dnnc's heuristics make for sm_90a.
"""

from dataclasses import dataclass

import torch

from dnnc.torch.backend import dnnc_backend


@dataclass
class Explanation:
    """The GraphReports of one explain run; ``str()`` is the report."""

    graphs: list

    @property
    def dnnc_ops(self):
        """(graph kind, region, node, op) of every ATen op dnnc runs."""
        return [(g.kind, r.name, node, op) for g in self.graphs for r in g.regions
                for node, op in r.ops]

    @property
    def fallbacks(self):
        """(graph kind, node, op, reason) of every ATen op left to torch."""
        return [(g.kind, node, op, why) for g in self.graphs for node, op, why in g.fallbacks]

    def __str__(self):
        lines = []
        for g in self.graphs:
            n_dnnc = sum(len(r.ops) for r in g.regions)
            lines.append(f"{g.kind} graph: {n_dnnc} ATen ops in {len(g.regions)} dnnc "
                         f"region(s), {len(g.fallbacks)} left to torch; the rest runs in "
                         f"{g.residual}")
            for r in g.regions:
                ops = ", ".join(op for _, op in r.ops)
                lines.append(f"  {r.name}: {ops}")
                for name, strategy, reason in r.kernels:
                    lines.append(f"    kernel {name}: {strategy}")
                    if reason:
                        lines.append(f"      why: {reason}")
            if g.fallbacks:
                lines.append("  left to torch:")
                for node, op, why in g.fallbacks:
                    lines.append(f"    {node} ({op}): {why}")
        return "\n".join(lines)


def explain(model, *inputs, backward=False, fallback=None, **kwargs):
    """Compile ``model`` with the dnnc backend, run it on ``inputs`` (and
    ``kwargs``), and return the Explanation (module docstring)."""
    graphs = []
    torch._dynamo.reset()
    options = {"report": graphs}
    if fallback is not None:
        options["fallback"] = fallback
    compiled = torch.compile(model, backend=dnnc_backend, options=options, dynamic=False)
    out = compiled(*inputs, **kwargs)
    if backward:
        leaves = [t for t in _tensors(out) if t.requires_grad]
        if leaves:
            sum(t.float().sum() for t in leaves).backward()
    for g in graphs:
        for r in g.regions:
            r.kernels = r.region.kernels()
    torch._dynamo.reset()
    return Explanation(graphs)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []

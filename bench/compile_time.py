"""Compile time of the dnnc graphs ``torch.compile(backend="dnnc")`` makes of a
model, graph to PTX (and the cubin, as the JIT makes it on a GPU host),
measured without a GPU.

    python bench/compile_time.py --only resnet50 --steps training
    python bench/compile_time.py --only gpt2_block --json ct.json --ptx-dir out/

The step is traced on meta tensors as bench/torch_plan.py traces it, so that
the ATen graphs (inference; or the forward and backward graphs AOTAutograd
makes of a training step) are those a CUDA device gives. Each graph is split
into regions as the backend splits it, each region lowered to a dnnc graph
and compiled for sm_90a with no JIT cache (``compiler.compile_cuda(...,
cache=False)``). Reported per model and step: kernels (PTX entries) against
the launches and the kernel functions the ``gpu`` stage outlined (identical
kernels are compiled once, dnn-dedup-kernels), wall-clock and CPU seconds
(this process and ptxas) per region and per stage (the pipeline's stages and
``cubin``, ptxas; what a region's total has beyond them is the driver's own
work: signature, plan, PTX checks, the package), the costliest passes, and
with ``--ptxas-kernels N`` the N slowest entries under ptxas alone (a second
ptxas run per entry). ``--ptx-dir`` writes each region's PTX there, to
compare two commits entry by entry; ``--no-dedup`` compiles every
occurrence of a kernel, as before dnn-dedup-kernels. ``DNNC_PTXAS_THREADS``
is read as in any compile. Seconds depend on the machine and its load: on
a shared machine compare the CPU seconds.
"""

import argparse
import contextlib
import hashlib
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402
from torch_plan import _CudaAttention  # noqa: E402

SIZES = {"resnet50": (128, {}), "gpt2_block": (8, {"seq": 1024}),
         "vit_block": (64, {})}


def trace(name, train):
    """[(kind, ATen GraphModule)] of model ``name``'s inference or training
    step, traced on meta tensors in bf16 (channels-last for ResNet-50)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    from dnnc.torch import backend

    graphs = []

    def capture(kind):
        def compile_(gm, example_inputs):
            graphs.append((kind, gm))
            return make_boxed_func(gm.forward)
        return compile_

    batch, kw = SIZES[name]
    small = dict(kw, seq=1) if "seq" in kw else {"image": 8}
    model, _ = torch_models.build(name, 1, device="cpu", dtype=torch.float32, **small)
    model = model.to(device="meta", dtype=torch.bfloat16)
    if name == "resnet50":
        model = model.to(memory_format=torch.channels_last)
        x = torch.empty(batch, 3, 224, 224, device="meta", dtype=torch.bfloat16)
        x = x.contiguous(memory_format=torch.channels_last)
    else:
        x = torch.empty(batch, kw.get("seq", 197), 768, device="meta", dtype=torch.bfloat16)
    model.train(train)
    torch._dynamo.reset()
    compiled = torch.compile(model, dynamic=False, backend=aot_autograd(
        fw_compiler=capture("forward"), bw_compiler=capture("backward"),
        inference_compiler=capture("inference"), decompositions=backend._decompositions()))
    with _CudaAttention():
        if train:
            compiled(x).float().square().mean().backward()
        else:
            with torch.no_grad():
                compiled(x)
    torch._dynamo.reset()
    return graphs


def region_graphs(kind, gm):
    """The dnnc graphs of ``gm``'s regions, as the backend lowers them for CUDA."""
    from dnnc.torch import aliases, aten_map, partition
    from dnnc.torch.lowering import Lowering

    out = []
    regions, _ = partition.propose(gm, "cuda")
    for i, nodes in enumerate(regions):
        outputs = aliases.plan(nodes, partition.outputs_of(nodes))
        low = Lowering(f"{kind}_region{i}", "cuda")
        for node in nodes:
            aten_map.lower(low, node)
        low.set_outputs(outputs.outputs)
        if low.graph.outputs:
            out.append(low.graph)
    return out


class Clock:
    """Seconds by stage, wall-clock and CPU (this process and ptxas): the
    pipeline's stages (timed where dnnc/targets/cuda.py runs them) and
    ``cubin`` (ptxas)."""

    def __init__(self):
        self.stages = {}
        self.cpu = {}

    def add(self, name, seconds, cpu):
        self.stages[name] = self.stages.get(name, 0.0) + seconds
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu

    def install(self):
        from dnnc import stages
        from dnnc.targets import cuda

        original_run_stages = stages.run_stages

        def run_stages(module, stage_list, **kw):
            ran = []
            for stage in stage_list:
                t0, c0 = time.perf_counter(), _cpu()
                ran += original_run_stages(module, [stage], **kw)
                self.add(stage.name, time.perf_counter() - t0, _cpu() - c0)
            return ran

        cuda.run_stages = run_stages
        self._wrap(cuda, "make_cubins", "cubin")

    def _wrap(self, mod, attr, label):
        fn = getattr(mod, attr)

        def timed(*a, **kw):
            t0, c0 = time.perf_counter(), _cpu()
            try:
                return fn(*a, **kw)
            finally:
                self.add(label, time.perf_counter() - t0, _cpu() - c0)
        setattr(mod, attr, timed)


def measure(name, train, ptx_dir=None, ptxas_kernels=0):
    """One row of the report (a dict)."""
    from dnnc import compiler, passes
    from dnnc.codegen.gpu import ptx as ptx_text

    t0 = time.perf_counter()
    graphs = [g for kind, gm in trace(name, train) for g in region_graphs(kind, gm)]
    traced = time.perf_counter() - t0
    clock = Clock()
    clock.install()
    row = {"model": name, "step": "training" if train else "inference", "trace_s": traced,
           "regions": [], "passes": {}}
    # An older dnnc (to compare against) has no pass timing: stages only.
    timing = getattr(passes, "timing", None) or (lambda: contextlib.nullcontext({}))
    with timing() as pass_times:
        for graph in graphs:
            t0, c0 = time.perf_counter(), _cpu()
            package = compiler.compile_cuda(graph, "sm_90a", cache=False)
            seconds, cpu = time.perf_counter() - t0, _cpu() - c0
            entries = ptx_text.entries(package.ptx)
            launches = package.manifest["kernels"]
            row["regions"].append({
                "graph": graph.name, "seconds": seconds, "cpu_s": cpu, "entries": len(entries),
                "launches": len(launches),
                "kernel_functions": len({k["name"] for k in launches}),
                "ptx_sha256": hashlib.sha256(package.ptx.encode()).hexdigest(),
                "cubin": bool(package.cubins)})
            if ptx_dir:
                os.makedirs(ptx_dir, exist_ok=True)
                with open(os.path.join(ptx_dir, f"{name}.{row['step']}.{graph.name}.ptx"),
                          "w") as f:
                    f.write(package.ptx)
            if ptxas_kernels:
                row.setdefault("ptxas_entries", []).extend(
                    _ptxas_per_entry(package.ptx, graph.name))
    row["passes"] = dict(sorted(pass_times.items(), key=lambda kv: -kv[1]))
    row["stages"] = clock.stages
    row["stages_cpu"] = clock.cpu
    row["compile_s"] = sum(r["seconds"] for r in row["regions"])
    row["compile_cpu_s"] = sum(r["cpu_s"] for r in row["regions"])
    if ptxas_kernels:
        row["ptxas_entries"] = sorted(row["ptxas_entries"], key=lambda e: -e[2])[:ptxas_kernels]
    return row


def _cpu():
    """CPU seconds of this process and of its finished children (ptxas)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def without_dedup():
    """Take dnn-dedup-kernels out of the cuda pipeline (compile every
    occurrence of a kernel, as before the pass)."""
    from dnnc import pipelines

    gpu = pipelines.GPU
    pipelines.GPU = pipelines.Stage(gpu.name, tuple(p for p in gpu.passes
                                                    if p != "dnn-dedup-kernels"))


def _ptxas_per_entry(ptx, graph):
    """[(graph, entry, seconds)]: ptxas on each entry alone (the module with
    every other entry's body dropped)."""
    import re
    import subprocess
    import tempfile

    from dnnc.codegen.gpu import ptxas

    tool = ptxas.find()
    if tool is None:
        return []
    starts = [m.start() for m in re.finditer(r"^\s*(?:\.visible\s+)?\.entry\s", ptx, re.M)]
    if not starts:
        return []
    head, bodies = ptx[:starts[0]], [ptx[a:b] for a, b in zip(starts, starts[1:] + [len(ptx)])]
    out = []
    with tempfile.TemporaryDirectory(prefix="dnnc-ct-") as tmp:
        for body in bodies:
            entry = re.search(r"\.entry\s+([\w$]+)", body).group(1)
            src = os.path.join(tmp, "k.ptx")
            with open(src, "w") as f:
                f.write(head + body)
            t0 = time.perf_counter()
            subprocess.run([tool, "-arch=sm_90a", "-o", os.path.join(tmp, "k.cubin"), src],
                           capture_output=True)
            out.append((graph, entry, time.perf_counter() - t0))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--steps", default="inference,training")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--ptx-dir", help="write each region's PTX here")
    parser.add_argument("--passes", type=int, default=12, help="list the N costliest passes")
    parser.add_argument("--ptxas-kernels", type=int, default=0, metavar="N",
                        help="time ptxas on each entry alone; list the N slowest")
    parser.add_argument("--no-dedup", action="store_true",
                        help="compile every occurrence of identical kernels "
                             "(dnn-dedup-kernels off)")
    args = parser.parse_args(argv)
    if args.no_dedup:
        without_dedup()
    names = [n for n in torch_models.MODELS if not args.only or n in args.only.split(",")]
    rows = []
    for name in names:
        for train in (False, True):
            if ("training" if train else "inference") not in args.steps.split(","):
                continue
            row = measure(name, train, args.ptx_dir, args.ptxas_kernels)
            rows.append(row)
            regions = row["regions"]
            print(f"{name} {row['step']}: {len(regions)} graphs, "
                  f"{sum(r['launches'] for r in regions)} launches, "
                  f"{sum(r['kernel_functions'] for r in regions)} kernel functions, "
                  f"{sum(r['entries'] for r in regions)} PTX entries; "
                  f"compile {row['compile_s']:.1f} s, {row['compile_cpu_s']:.1f} s CPU "
                  f"(trace {row['trace_s']:.1f} s)")
            for r in regions:
                print(f"  {r['graph']:<18} {r['seconds']:7.1f} s {r['cpu_s']:7.1f} s CPU "
                  f"{r['launches']:4d} launches "
                      f"{r['kernel_functions']:4d} functions {r['entries']:4d} entries  "
                      f"ptx {r['ptx_sha256'][:12]}{'' if r['cubin'] else '  (no cubin)'}")
            print("  stages, s (CPU s): " + ", ".join(
                f"{k} {v:.1f} ({row['stages_cpu'][k]:.1f})" for k, v in row["stages"].items()))
            print("  passes: " + ", ".join(f"{k} {v:.1f}"
                                           for k, v in list(row["passes"].items())[:args.passes]))
            for graph, entry, seconds in row.get("ptxas_entries", []):
                print(f"  ptxas {seconds:6.2f} s  {graph} {entry}")
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "cpus": os.cpu_count(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The sm_90a launch plan of a model's training step under ``backend="dnnc"``,
without a GPU: kernels, launches and the bytes each kernel's buffers span.

    python bench/torch_plan.py gpt2_block            # 8 x 1024 tokens, bf16
    python bench/torch_plan.py vit_block --batch 64 --kernels
    python bench/torch_plan.py resnet50 --batch 128 --kernels   # 224 x 224 images
    python bench/torch_plan.py resnet50 --batch 2 --seq 64     # quicker, same kernels

The step (forward, a loss, backward) is traced on meta tensors, so that the
ATen graphs are those a CUDA device gives (the layernorms' statistics in
f32, the attention as ``_scaled_dot_product_flash_attention``, which PyTorch
picks for bf16 and head dims up to 256) rather than the CPU's. Each graph is
split into regions as the backend splits it (partition.propose, then
aliases.plan), and each region compiled for sm_90a to the ``gpu`` stage.
Bytes are the sizes of the buffers a kernel's launches take (each once), an
estimate of the memory it moves: a copy counts its source and destination.
ResNet-50's rank-4 values are lowered channels-last, as a GPU lays them out
(``channels_last_values``; ``--no-channels-last``: with the strides the meta
trace gives them).
"""

import argparse
import contextlib
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402

SIZES = {"gpt2_block": (8, 1024), "vit_block": (64, 197), "resnet50": (128, 224)}


class _CudaAttention(torch.overrides.TorchFunctionMode):
    """``F.scaled_dot_product_attention`` (no mask, no dropout) as the flash
    attention op it is on a CUDA device; on meta tensors torch would pick
    the math decomposition."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and kwargs.get("attn_mask") is None:
            q, k, v = args[:3]
            return torch.ops.aten._scaled_dot_product_flash_attention(
                q, k, v, 0.0, kwargs.get("is_causal", False), scale=kwargs.get("scale"))[0]
        return func(*args, **kwargs)


def trace(name, batch, seq):
    """[(kind, ATen GraphModule)] of a training step of model ``name``."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    from dnnc.torch import backend

    graphs = []

    def capture(kind):
        def compile_(gm, example_inputs):
            graphs.append((kind, gm))
            return make_boxed_func(gm.forward)
        return compile_

    if name == "resnet50":   # seq is the image's side; channels-last, as the bench runs it
        model, _ = torch_models.build(name, 1, device="cpu", dtype=torch.float32, image=32)
        model = model.to(device="meta", dtype=torch.bfloat16)
        model = model.to(memory_format=torch.channels_last)
        x = torch.empty(batch, 3, seq, seq, device="meta", dtype=torch.bfloat16)
        x = x.contiguous(memory_format=torch.channels_last)
    else:
        model, _ = torch_models.build(name, 1, device="cpu", dtype=torch.float32, seq=1)
        model = model.to(device="meta", dtype=torch.bfloat16)
        x = torch.empty(batch, seq, 768, device="meta", dtype=torch.bfloat16)
    torch._dynamo.reset()
    compiled = torch.compile(model, dynamic=False, backend=aot_autograd(
        fw_compiler=capture("forward"), bw_compiler=capture("backward"),
        partition_fn=backend._partition, decompositions=backend._decompositions()))
    with _CudaAttention():
        out = compiled(x)
        out.float().square().mean().backward()
    torch._dynamo.reset()
    return graphs


@contextlib.contextmanager
def channels_last_values():
    """Within it, every rank-4 value of more than one channel is lowered
    channels-last, graph inputs and outputs included, as a GPU lays out a
    channels-last network's activations and gradients (cuDNN's convolutions
    keep their input's memory format; meta tensors' convolutions return
    contiguous strides, so a trace on them would plan NCHW buffers a GPU
    never sees)."""
    from dnnc.torch import lowering

    layout_of, input_layout = lowering.layout_of, lowering.input_layout

    def channels_last(original):
        def strides(val):
            shape = [int(d) for d in val.shape]
            if len(shape) == 4 and shape[1] > 1 and val.numel() > 1:
                return lowering.channels_last_strides(shape)
            return original(val)
        return strides

    lowering.layout_of = channels_last(layout_of)
    lowering.input_layout = channels_last(input_layout)
    try:
        yield
    finally:
        lowering.layout_of, lowering.input_layout = layout_of, input_layout


def _bytes(fn):
    """Bytes of the distinct buffers the gpu.launch_func ops of ``fn`` take."""
    from mlir import ir

    from dnnc.codegen.gpu import irutil
    from dnnc.dialect.walk import walk

    seen, total = set(), 0
    for op in walk(fn):
        if op.name != "gpu.launch_func":
            continue
        for value in op.operands:
            if not isinstance(value.type, ir.MemRefType) or value in seen:
                continue
            seen.add(value)
            t = ir.MemRefType(value.type)
            count = 1
            for n in t.shape:
                count *= n
            total += count * irutil.element_bytes(t.element_type)
    return total


def region_plan(kind, i, nodes):
    """[(kernel, strategy, launches, bytes, reason)] of one region on sm_90a."""
    from dnnc import compiler, plan
    from dnnc.codegen.gpu import irutil
    from dnnc.torch import aliases, aten_map, partition
    from dnnc.torch.lowering import Lowering

    outputs = aliases.plan(nodes, partition.outputs_of(nodes))
    low = Lowering(f"{kind}{i}", "cuda")
    for node in nodes:
        aten_map.lower(low, node)
    low.set_outputs(outputs.outputs)
    module = compiler.compile_cuda(low.graph, "sm_90a", stop_after="gpu")
    functions = {irutil.symbol(f): f for f in irutil.functions(module)}
    return [(k.name, k.strategy, k.launches, _bytes(functions[k.name]), k.reason)
            for k in plan.strategies(module)], outputs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=sorted(SIZES))
    parser.add_argument("--batch", type=int)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--kernels", action="store_true", help="list every kernel")
    parser.add_argument("--channels-last", action=argparse.BooleanOptionalAction,
                        help="lower every rank-4 value channels-last, as a GPU lays them "
                        "out (channels_last_values; the default for resnet50)")
    args = parser.parse_args(argv)
    from dnnc.torch import partition

    batch, seq = SIZES[args.model]
    batch, seq = args.batch or batch, args.seq or seq
    channels_last = args.model == "resnet50" if args.channels_last is None else \
        args.channels_last
    for kind, gm in trace(args.model, batch, seq):
        regions, refused = partition.propose(gm, "cuda")
        for i, nodes in enumerate(regions):
            with channels_last_values() if channels_last else contextlib.nullcontext():
                kernels, outputs = region_plan(kind, i, nodes)
            launches = sum(k[2] for k in kernels)
            mb = sum(k[3] for k in kernels) / 1e6
            print(f"{args.model} {batch}x{seq} {kind} region {i}: {len(kernels)} kernels, "
                  f"{launches} launches, {mb:.1f} MB; {len(outputs.outputs)} outputs, "
                  f"{len(outputs.views)} views of them")
            for name, strategy, n, size, reason in kernels if args.kernels else ():
                print(f"  {name:<34} {strategy:<20} x{n} {size / 1e6:8.1f} MB  {reason[:150]}")
        for node, why in refused.items():
            print(f"  left to torch: {node.name}: {why}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())

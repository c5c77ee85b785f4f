"""``dnnc::matmul`` (batched, batch dims broadcast as torch.matmul's) and
``dnnc::linear`` (x @ w^T + bias, x of rank 2), with their backwards: the
matmul transposes dA = dC @ B^T and dB = A^T @ dC, each summed over the
batch dims its operand was broadcast along, and linear's dbias, a sum over
the rows. A transposed operand is passed to the graph as the strided view
it is (no copy): the strides tell dnnc which way to read it.

f32 matmuls multiply as cuBLAS's do under PyTorch: as tf32 on CUDA when
``torch.get_float32_matmul_precision()`` is not "highest", exactly otherwise.
"""

from typing import List, Optional

import torch
from torch import Tensor

from dnnc.torch._library import call, check, empty, output, qualified


def _compute(t):
    if t.dtype == torch.float32 and t.device.type == "cuda" and \
            torch.get_float32_matmul_precision() != "highest":
        return "tf32"
    return None


def _rowmajor(t):
    """``t`` as it is if its last two dims are row- or column-major, else a copy."""
    if t.is_contiguous() or t.transpose(-1, -2).is_contiguous():
        return t
    return t.contiguous()


def _padded(t, rank):
    return t.reshape([1] * (rank - t.dim()) + list(t.shape)) if t.dim() < rank else t


def _batch(a, b):
    return list(torch.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))


def _check(a, b):
    check(a.dim() >= 2 and b.dim() >= 2, "matmul", f"inputs 'a', 'b': expected rank >= 2, "
          f"got ranks {a.dim()} and {b.dim()}")
    check(a.shape[-1] == b.shape[-2], "matmul", f"input 'b' dim {b.dim() - 2}: expected "
          f"{a.shape[-1]} (K of 'a'), got {b.shape[-2]}")


@torch.library.custom_op(qualified("matmul"), mutates_args=())
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b, batch dims broadcast."""
    _check(a, b)
    batch = _batch(a, b)
    rank = len(batch) + 2
    a, b = _padded(_rowmajor(a), rank), _padded(_rowmajor(b), rank)
    compute = _compute(a)

    def build(g, i):
        return [output(g.matmul(i["a"], i["b"], compute_data_type=compute), a.dtype)]

    return call("matmul", (compute,), [("a", a), ("b", b)], build, [a.dtype])[0]


@matmul.register_fake
def _(a, b):
    _check(a, b)
    return empty(_batch(a, b) + [a.shape[-2], b.shape[-1]], a.dtype, a.device)


def _reduced(g, full, shape, rank):
    """Graph tensor ``full`` summed over the batch dims along which an
    operand of ``shape`` (left-padded to ``rank``) was broadcast."""
    padded = [1] * (rank - len(shape)) + list(shape)
    axes = [d for d in range(rank - 2) if padded[d] == 1 and full.dim[d] != 1]
    if not axes:
        return full
    return g.reduction(full, "sum", axes, keepdims=True)


@torch.library.custom_op(qualified("matmul_backward"), mutates_args=())
def matmul_backward(dc: Tensor, a: Tensor, b: Tensor, needs: List[bool]) -> List[Tensor]:
    """[da, db] where ``needs`` says: dc @ b^T and a^T @ dc, reduced to the
    operands' shapes."""
    rank = dc.dim()
    a0, b0 = a, b
    a, b, dc = _padded(_rowmajor(a), rank), _padded(_rowmajor(b), rank), dc.contiguous()
    compute = _compute(a)
    tensors = [("dc", dc), ("bt", b.transpose(-1, -2) if needs[0] else None),
               ("at", a.transpose(-1, -2) if needs[1] else None)]

    def build(g, i):
        outs = []
        if needs[0]:
            full = g.matmul(i["dc"], i["bt"], compute_data_type=compute)
            outs.append(output(_reduced(g, full, a.shape, rank), a.dtype))
        if needs[1]:
            full = g.matmul(i["at"], i["dc"], compute_data_type=compute)
            outs.append(output(_reduced(g, full, b.shape, rank), b.dtype))
        return outs

    dtypes = [t.dtype for t, n in zip((a, b), needs) if n]
    outs = call("matmul_backward", (compute, tuple(needs)), tensors, build, dtypes)
    shapes = [t.shape for t, n in zip((a0, b0), needs) if n]
    return [o.reshape(s) for o, s in zip(outs, shapes)]


@matmul_backward.register_fake
def _(dc, a, b, needs):
    return [empty(t.shape, t.dtype, t.device) for t, n in zip((a, b), needs) if n]


def _setup_matmul(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward_matmul(ctx, dc):
    a, b = ctx.saved_tensors
    needs = list(ctx.needs_input_grad[:2])
    grads = iter(matmul_backward(dc, a, b, needs) if any(needs) else [])
    return tuple(next(grads) if n else None for n in needs)


matmul.register_autograd(_backward_matmul, setup_context=_setup_matmul)


def _check_linear(x, w, bias):
    check(x.dim() == 2, "linear", f"input 'x': expected rank 2 (rows, in_features), got rank "
          f"{x.dim()}")
    check(w.dim() == 2 and w.shape[1] == x.shape[1], "linear", f"input 'w': expected "
          f"[out_features, {x.shape[1]}], got {list(w.shape)}")
    if bias is not None:
        check(list(bias.shape) == [w.shape[0]], "linear",
              f"input 'bias': expected [{w.shape[0]}], got {list(bias.shape)}")


@torch.library.custom_op(qualified("linear"), mutates_args=())
def linear(x: Tensor, w: Tensor, bias: Optional[Tensor]) -> Tensor:
    """x @ w^T (+ bias)."""
    _check_linear(x, w, bias)
    x, w = _rowmajor(x), _rowmajor(w)
    compute = _compute(x)

    def build(g, i):
        y = g.matmul(i["x"], i["wt"], compute_data_type=compute)
        if "bias" in i:
            y = g.add(y, i["bias"])
        return [output(y, x.dtype)]

    b = bias.reshape(1, -1) if bias is not None else None
    return call("linear", (compute,), [("x", x), ("wt", w.t()), ("bias", b)], build,
                [x.dtype])[0]


@linear.register_fake
def _(x, w, bias):
    _check_linear(x, w, bias)
    return empty([x.shape[0], w.shape[0]], x.dtype, x.device)


@torch.library.custom_op(qualified("linear_backward"), mutates_args=())
def linear_backward(dy: Tensor, x: Tensor, w: Tensor, needs: List[bool]) -> List[Tensor]:
    """[dx, dw, dbias] where ``needs`` says: dy @ w, dy^T @ x, the column sums of dy."""
    dy, x, w = dy.contiguous(), _rowmajor(x), _rowmajor(w)
    compute = _compute(x)
    tensors = [("dy", dy if needs[0] or needs[2] else None),
               ("w", w if needs[0] else None),
               ("dyt", dy.t() if needs[1] else None), ("x", x if needs[1] else None)]

    def build(g, i):
        outs = []
        if needs[0]:
            outs.append(output(g.matmul(i["dy"], i["w"], compute_data_type=compute), x.dtype))
        if needs[1]:
            outs.append(output(g.matmul(i["dyt"], i["x"], compute_data_type=compute), w.dtype))
        if needs[2]:
            outs.append(output(g.reduction(i["dy"], "sum", [0], keepdims=False), dy.dtype))
        return outs

    dtypes = [t for t, n in zip((x.dtype, w.dtype, dy.dtype), needs) if n]
    return call("linear_backward", (compute, tuple(needs)), tensors, build, dtypes)


@linear_backward.register_fake
def _(dy, x, w, needs):
    shapes = ((x.shape, x.dtype), (w.shape, w.dtype), ([w.shape[0]], dy.dtype))
    return [empty(s, dt, dy.device) for (s, dt), n in zip(shapes, needs) if n]


def _setup_linear(ctx, inputs, output):
    x, w, bias = inputs
    ctx.save_for_backward(x, w)
    ctx.has_bias = bias is not None


def _backward_linear(ctx, dy):
    x, w = ctx.saved_tensors
    needs = [ctx.needs_input_grad[0], ctx.needs_input_grad[1],
             ctx.has_bias and ctx.needs_input_grad[2]]
    grads = iter(linear_backward(dy, x, w, needs) if any(needs) else [])
    return tuple(next(grads) if n else None for n in needs)


linear.register_autograd(_backward_linear, setup_context=_setup_linear)

"""What ``dnnc.torch`` does with a call dnnc cannot run: fall back to
PyTorch's own op, warning once per op and reason, or, when strict, refuse.

    dnnc.torch.set_strict(True)          # every later call: UnsupportedError
    with dnnc.torch.strict():            # the calls inside only
        ...
    dnnc.torch.conv2d(x, w, strict=True) # this call only

A fallback never changes a result: the torch op computes what dnnc would
have (it is the reference the tests compare dnnc against). The reasons are
decided from what the call is (dtypes, devices, arguments), never from a
failure halfway through, so a traced graph takes the same path every run.
"""

import contextlib
import threading
import warnings

import torch

from dnnc.errors import UnsupportedError

# The element types dnnc computes in; others (float64, integers, complex) fall back.
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
DEVICES = ("cpu", "cuda")


class FallbackWarning(UserWarning):
    """A ``dnnc.torch`` call ran PyTorch's op instead of dnnc's (once per op and reason)."""


_state = threading.local()
_default = {"strict": False}
_warned = set()


def set_strict(flag=True):
    """Make every later call (in every thread without a ``strict()`` block)
    raise ``UnsupportedError`` instead of falling back."""
    _default["strict"] = bool(flag)


@contextlib.contextmanager
def strict(flag=True):
    """Within the block, this thread's calls refuse (``flag`` True) or fall back."""
    before = getattr(_state, "strict", None)
    _state.strict = bool(flag)
    try:
        yield
    finally:
        _state.strict = before


def is_strict(asked=None):
    """The strictness of a call: its own ``strict=`` if given, else the
    innermost ``strict()`` block's, else ``set_strict``'s."""
    if asked is not None:
        return bool(asked)
    local = getattr(_state, "strict", None)
    return _default["strict"] if local is None else local


def unsupported(op, reason, asked=None):
    """Report that dnnc cannot run ``op`` for ``reason``: raise
    UnsupportedError when strict, else warn (once per op and reason); the
    caller then runs the torch op."""
    if is_strict(asked):
        raise UnsupportedError(f"dnnc.torch.{op}: {reason} (strict: no fallback to torch)")
    if (op, reason) not in _warned:
        _warned.add((op, reason))
        warnings.warn(f"dnnc.torch.{op}: {reason}; running torch's {op} instead",
                      FallbackWarning, stacklevel=3)


def tensor_reason(op_tensors):
    """Why dnnc cannot take these tensors ((name, tensor or None) pairs), or
    None: each must be a float32 / float16 / bfloat16 tensor on the CPU or a
    CUDA device, all on one device, none sparse, none complex."""
    device = None
    for name, t in op_tensors:
        if t is None:
            continue
        if t.layout != torch.strided:
            return f"tensor '{name}': expected a strided (dense) tensor, got layout {t.layout}"
        if t.dtype not in FLOATS:
            return (f"tensor '{name}': expected dtype float32, float16 or bfloat16, "
                    f"got {t.dtype}")
        if t.device.type not in DEVICES:
            return f"tensor '{name}': expected a CPU or CUDA tensor, got device {t.device}"
        if device is None:
            device = t.device
        elif t.device != device:
            return (f"tensor '{name}': expected device {device} (of the first tensor), "
                    f"got {t.device}")
    return None

"""Runtime scalars: the value a call passes for a by-value input.

A graph input made with ``Graph.scalar`` (manifest ``"by_value": true``,
rank 0, f32) is not a buffer: its value goes to the kernels that read it
as an f32 kernel parameter (``scalar_input`` arguments). A call passes it
as a number on the host:

* a Python ``float`` or ``int`` (not ``bool``);
* a NumPy floating or integer scalar, or a 0-d / one-element array of one;
* a one-element torch tensor on the CPU.

The value is rounded to f32 (to nearest even); one outside f32's range
(not inf) is refused, as is anything else: a device tensor (reading it
would synchronize the stream; pass ``.item()``), a string, None, a
boolean. The error is ``ArgumentError`` naming the input, as for arrays.
The GPU runtime and dnnc's CPU back end both read scalars through ``value``
so that the two refuse the same things. NumPy is not imported here: an
argument can only be one of its types where its caller imported it.
"""

import struct
import sys

from .errors import ArgumentError

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def value(arg, spec_name, label):
    """``arg`` as the f32 (a Python float) that input ``label`` (a by-value
    scalar named ``spec_name``) takes; ArgumentError when it is not a number."""
    kind = type(arg)
    try:
        # The common case, first and cheap: a Python number.
        number = float(arg) if kind is float or kind is int else _number(arg, spec_name, label)
        return _F32.unpack(_F32.pack(number))[0]
    except OverflowError:
        raise ArgumentError(f"{label}: expected a value within f32's range (|x| <= 3.4028235e38 "
                            f"or inf) for a runtime scalar, got {repr(arg):.40}",
                            tensor=spec_name) from None


def bits(arg, spec_name, label):
    """The 32 bits of ``value(arg)``, as an int: what the runtime writes in
    the kernel parameter slot (little-endian, the low four bytes)."""
    return _U32.unpack(_F32.pack(value(arg, spec_name, label)))[0]


def _number(arg, spec_name, label):
    np = sys.modules.get("numpy")
    if isinstance(arg, bool) or np is not None and isinstance(arg, np.bool_):
        raise _refused(arg, spec_name, label)
    if isinstance(arg, (int, float)) or np is not None and isinstance(arg, (np.integer,
                                                                            np.floating)):
        return float(arg)
    if np is not None and isinstance(arg, np.ndarray):
        if arg.size == 1 and arg.dtype.kind in "iuf":
            return float(arg.reshape(()))
        raise _refused(arg, spec_name, label, f"an array of dtype {arg.dtype} and shape "
                                             f"{list(arg.shape)}")
    device = getattr(arg, "device", None)
    if device is not None and hasattr(arg, "numel") and hasattr(arg, "item"):  # torch
        if getattr(device, "type", "cpu") != "cpu":
            raise _refused(arg, spec_name, label, f"a tensor on {device} (reading it would "
                                                 "synchronize the stream: pass .item())")
        if arg.numel() != 1 or arg.is_complex() or str(arg.dtype) == "torch.bool":
            raise _refused(arg, spec_name, label, f"a tensor of dtype {arg.dtype} and shape "
                                                 f"{list(arg.shape)}")
        return float(arg.item())
    raise _refused(arg, spec_name, label)


def _refused(arg, spec_name, label, what=None):
    return ArgumentError(f"{label}: expected a number (a Python float, a NumPy scalar or a "
                         f"one-element CPU array) for a runtime scalar, got "
                         f"{what or type(arg).__name__}", tensor=spec_name)

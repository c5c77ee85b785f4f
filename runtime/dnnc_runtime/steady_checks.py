"""The fast path's argument checks, made per executable as straight-line Python.

A steady call (``relaunch.Relaunch``) checks every argument against the
manifest: a torch tensor, of the dtype, dims, strides and device fixed
there, at an address aligned as the kernels assume; a runtime scalar is
read as its f32 bits. Written as a loop over the arguments, the Python
interpreter's own work (the loop, unpacking each argument's expectations,
the branches) cost about 200 ns an argument on a 2-core Xeon host, as
much as the torch attribute reads themselves. So the checks are written
out once per executable, with the expectations bound as names, one block
per argument, and compiled (as Triton writes a launcher per kernel
signature): for a bf16 input ``x`` of dims [256, 1024, 1, 1] in
channels-last strides, aligned to 16 bytes, the block reads::

    # input 'x': bf16 [256, 1024, 1, 1], strides [1024, 1, 1024, 1024]
    if not isinstance(t0, Tensor) or t0.dtype is not D0 or t0.shape != S0:
        return MISS
    if t0.stride() != E[0]:
        strides_differ(0, t0)
    if t0.device != DEVICE:
        return MISS
    a0 = t0.data_ptr()
    if a0 & 15:
        return MISS

The checks and their order are the loop's (and the general path's):
dtype, dims, strides, device, alignment, argument by argument. Where the
manifest's strides are the packed row-major ones, torch's
``is_contiguous()`` (a flag torch keeps, which like the manifest ignores
size-1 dims) stands for the strides' comparison. ``strides_differ``
raises the general path's ArgumentError, or accepts strides that differ
only on size-1 dims and records them in ``E`` (the next call compares
with them). A MISS sends the call to the general path, which names what
is wrong. ``check.source`` is the text; tracebacks show its lines.
"""

import linecache
import itertools

_serial = itertools.count()


def _packed(dims, strides):
    """Whether ``strides`` are the row-major packed strides of ``dims``."""
    step = 1
    for d, s in zip(reversed(dims), reversed(strides)):
        if s != step:
            return False
        step *= d
    return True


def expected_strides(specs):
    """Per argument, what its strides are compared with: None where the
    manifest's are packed (``is_contiguous()`` answers), else the manifest's."""
    return [None if _packed(s.dims, s.strides) else s.strides for s in specs]


def compile_checks(specs, tensor_type, torch_dtype, device, expected, strides_differ,
                   scalar_bits, miss):
    """``check(tensors)``: the addresses (and scalar bits) of ``tensors``, one
    per spec in order, as a new list; ``miss`` when a tensor is not one the
    fast path serves. ``expected`` is expected_strides' list, shared with
    ``strides_differ(i, tensor)``; ``scalar_bits(value, spec)`` reads a
    runtime scalar. The caller checks ``len(tensors)`` first."""
    names = {"Tensor": tensor_type, "DEVICE": device, "E": expected, "MISS": miss,
             "strides_differ": strides_differ, "scalar_bits": scalar_bits}
    lines = ["def check(tensors):"]
    if not specs:
        lines.append("    return []")
    else:
        lines.append(f"    {', '.join(f't{i}' for i in range(len(specs)))}, = tensors")
    for i, s in enumerate(specs):
        t, a = f"t{i}", f"a{i}"
        label = ascii(s.label)[1:-1]     # a comment line whatever the name holds
        if s.by_value:
            names[f"SPEC{i}"] = s
            lines += [f"    # {label}: a runtime scalar (f32 bits)",
                      f"    {a} = scalar_bits({t}, SPEC{i})"]
            continue
        names[f"D{i}"], names[f"S{i}"] = torch_dtype(s.dtype), s.dims
        lines += [f"    # {label}: {s.dtype} {list(s.dims)}, strides {list(s.strides)}",
                  f"    if not isinstance({t}, Tensor) or {t}.dtype is not D{i} or "
                  f"{t}.shape != S{i}:",
                  "        return MISS"]
        if expected[i] is None:
            lines.append(f"    if not {t}.is_contiguous():")
        else:
            lines.append(f"    if {t}.stride() != E[{i}]:")
        lines += [f"        strides_differ({i}, {t})",
                  f"    if {t}.device != DEVICE:",
                  "        return MISS",
                  f"    {a} = {t}.data_ptr()"]
        mask = s.alignment - 1 if s.numel else 0   # an empty tensor may sit anywhere
        if mask:
            lines += [f"    if {a} & {mask}:", "        return MISS"]
    if specs:
        lines.append(f"    return [{', '.join(f'a{i}' for i in range(len(specs)))}]")
    source = "\n".join(lines) + "\n"
    filename = f"<dnnc_runtime steady checks {next(_serial)}>"
    exec(compile(source, filename, "exec"), names)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    check = names["check"]
    check.source = source
    return check

"""How the runner compares an output with its reference (torch only, on
the GPU or, in the tests, the CPU).

The tolerance rule is test/gpu/gpu_cases/case.py's (a CPU test holds the
two equal): |got - ref| <= atol + rtol |ref| with rtol per output type (or
per the type of the roundings inside, ``precision``, as Case.rtol says);
atol = rtol * max(1, max |ref|), or, for an output that sums k products
of inputs a and b (``tolerance`` in the configuration), rtol * max(1,
TAIL sqrt(k) rms(a) rms(b) gain), rms over the finite values. The
reference is rounded to the output's type first, so that a value past
the type's range is an infinity on both sides.

Beyond the tolerance: where the reference has NaN the output must be NaN
(any NaN); where it has an infinity the output must be the same one; an
element still holding the poison (a NaN with a payload no arithmetic
makes) was never written.
"""

import math
from dataclasses import dataclass

import torch

RTOL = {"f32": 2e-4, "f16": 2e-3, "bf16": 1.6e-2}
TAIL = 4.0
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# Quiet NaNs with a payload of alternating bits: arithmetic makes the
# canonical NaN (or passes on an input's), never these.
POISON = {"f32": 0x7FE5A5A5, "f16": 0x7EA5, "bf16": 0x7FE5}
BITS = {"f32": torch.int32, "f16": torch.int16, "bf16": torch.int16}
CHUNK = 1 << 26


def poisoned(dims, strides, dtype, device):
    """An output buffer of ``dims`` / ``strides`` filled with the poison."""
    out = torch.empty_strided(dims, strides, dtype=TORCH[dtype], device=device)
    # Fill the whole storage (padding included) through a flat view of it.
    storage = torch.empty(0, dtype=TORCH[dtype], device=device).set_(
        out.untyped_storage(), 0, (out.untyped_storage().nbytes() // out.element_size(),))
    storage.view(BITS[dtype]).fill_(POISON[dtype])  # each below its type's sign bit
    return out


def _rms(x):
    x = x.reshape(-1)
    total, count = 0.0, 0
    for i in range(0, x.numel(), CHUNK):
        part = x[i:i + CHUNK].double()
        part = part[torch.isfinite(part)]
        total += float((part * part).sum())
        count += part.numel()
    return math.sqrt(total / count) if count else 0.0


def tolerance(dtype, ref, rule=None, values=None, precision=None):
    """(rtol, atol) of an output of type ``dtype`` whose rounded reference
    is ``ref``; ``rule``: its configuration's ``tolerance`` entry, with the
    inputs ``values`` by name; ``precision``: the type whose rtol applies
    when it is not the output's (an f32 output computed through roundings
    to a 16-bit type: program.py)."""
    rtol = RTOL[precision or dtype]
    if rule is not None:
        b = _rms(values[rule["b"]]) if rule.get("b") else 1.0
        scale = TAIL * math.sqrt(rule["k"]) * _rms(values[rule["a"]]) * b * rule["gain"]
        return rtol, rtol * max(1.0, scale)
    top = 0.0
    flat = ref.reshape(-1)
    for i in range(0, flat.numel(), CHUNK):
        part = flat[i:i + CHUNK]
        part = part[torch.isfinite(part)]
        if part.numel():
            top = max(top, float(part.abs().max()))
    return rtol, rtol * max(1.0, top)


@dataclass
class Mismatch:
    """What is wrong with one output: counts of each kind, the first bad
    element (logical index), its value and the reference's."""

    elements: int
    unwritten: int = 0
    nan: int = 0          # NaN (written) where the reference has none
    missing_nan: int = 0  # a number where the reference has NaN
    wrong: int = 0        # out of tolerance, infinities that differ included
    first: tuple = None
    got: float = None
    expected: float = None

    @property
    def bad(self):
        return self.unwritten + self.nan + self.missing_nan + self.wrong

    def describe(self):
        kinds = [f"{n} {what}" for n, what in ((self.unwritten, "unwritten (poison intact)"),
                                               (self.nan, "NaN where the reference has none"),
                                               (self.missing_nan, "not NaN where the "
                                                "reference is NaN"),
                                               (self.wrong, "out of tolerance")) if n]
        return (f"{self.bad} of {self.elements} elements wrong ({', '.join(kinds)}); first at "
                f"{list(self.first)}: got {self.got!r}, expected {self.expected!r}")


def check(got, ref, dtype, rtol, atol):
    """Compare output ``got`` (its type, any strides) with ``ref`` (rounded
    to ``dtype``, float64 or float32, same dims); None when they agree."""
    dims = tuple(got.shape)
    result = Mismatch(elements=got.numel())
    got_flat = got.contiguous().reshape(-1)
    ref_flat = ref.contiguous().reshape(-1)
    poison = POISON[dtype]
    for i in range(0, got_flat.numel(), CHUNK):
        g, r = got_flat[i:i + CHUNK], ref_flat[i:i + CHUNK]
        bits = g.view(BITS[dtype]).to(torch.int64) & ((1 << (8 * g.element_size())) - 1)
        unwritten = bits == poison
        gv = g.to(r.dtype)
        g_nan, r_nan = torch.isnan(gv) & ~unwritten, torch.isnan(r)
        nan = g_nan & ~r_nan
        missing = r_nan & ~torch.isnan(gv)
        both = ~(torch.isnan(gv) | r_nan)
        with torch.no_grad():
            diff = (gv - r).abs()
            same_inf = torch.isinf(r) & (gv == r)
            # An infinite reference makes the bound infinite: it must be met exactly.
            close = torch.isfinite(r) & (diff <= atol + rtol * r.abs())
            wrong = both & ~(same_inf | close)
        bad = unwritten | nan | missing | wrong
        result.unwritten += int(unwritten.sum())
        result.nan += int(nan.sum())
        result.missing_nan += int(missing.sum())
        result.wrong += int(wrong.sum())
        if result.first is None and bool(bad.any()):
            j = int(torch.nonzero(bad)[0, 0])
            result.first = _unravel(i + j, dims)
            result.got = float(gv[j])
            result.expected = float(r[j])
    return result if result.bad else None


def _unravel(flat, dims):
    index = []
    for d in reversed(dims):
        index.append(flat % d if d else 0)
        flat //= max(d, 1)
    return tuple(reversed(index))

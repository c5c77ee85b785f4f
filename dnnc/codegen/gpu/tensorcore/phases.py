"""A strided data gradient as stride-1 implicit GEMMs, one per stride phase.

The forward convolution of stride s, dilation dl and padding pre pairs
input row h with output row o and filter tap r (cross-correlation order)
where h + pre = o * s + r * dl, so

    dx[h] = sum over (o, r) with o * s = h + pre - r * dl of dy[o] * w[r].

Split dx's rows by phase: h = s * i + phi, phi = 0 .. s - 1. Row i of phase
phi meets tap r only if s divides phi + pre - r * dl. With g = gcd(s, dl)
that needs g | phi + pre, and then holds for the taps r = r0, r0 + s / g,
r0 + 2 s / g, ... below R (r0 the least); for such a tap
o = i + c0 - t * dl / g, t its rank among them and
c0 = (phi + pre - r0 * dl) / s. Numbering the T taps from the last,
u = T - 1 - t, the phase is the stride-1 forward convolution

    dx_phi[i] = sum over u of dy[i - pre' + u * dl'] * w[r(T - 1 - u)]

with dilation dl' = dl / g, padding pre' = (T - 1) * dl' - c0 in front and
post' = (H_phi - 1) + (T - 1) * dl' - pre' - (P - 1) behind (P: dy's rows;
either may be negative: rows of dy the phase never reads), over
H_phi = ceil((H - phi) / s) rows. In 2-D and 3-D a phase is one phi per
spatial dim, its taps the product of each dim's: a strided gradient is
prod(s) such convolutions, each multiplying only the taps that meet, where
the gradient of dy with s - 1 zeros between its pixels (the stride-1 one of
a zero-inserted dy) multiplies prod(s) times as much. A phase of no taps
(T = 0 in some dim: a 1 x 1 filter at stride 2 leaves three of four) gets
no GEMM: dx there is 0, or what the fused epilogue makes of 0.

``split`` is that index math, pure Python (test_conv_phases.py reassembles
dx from it against the numpy reference). phase_kernels.py builds it for
either strategy (sm90/__init__.py's ``build_phases``, sm80's
``build_conv``), host side:

* the sub-filters: one launch ahead of the GEMMs copies each phase's taps,
  in its order u, into ``[K, T_phase, C]`` slices of one workspace buffer
  (the filter is small, the copy cheap, and a phase's taps are not one
  stride apart in 2-D: no view of the filter reads them);
* the GEMMs: one launch per phase with taps, each a stride-1 implicit GEMM
  over dy as it lies (TMA's im2col box from -pre' to post'), its K the
  phase's taps x K. One launch a phase, not one launch with the phase on a
  grid dimension: the phases' K loops differ in length (a 3 x 3 filter at
  stride 2 gives phases of 4, 2, 2 and 1 taps) and their M too where H is
  not a multiple of s, and the persistent kernel's scheduler, ring and
  descriptors are the matmul's as they are;
* the outputs: phase phi's rows are dx's pixels (n, s i + phi_h, s j +
  phi_w), not rows of a matrix. Each of the epilogue's ``[M, N]`` views of
  dx-shaped buffers (outputs, and inputs such as a residual) gets a pixel
  view ``[N, H_phi, W_phi, C]`` with strides (H W C, s W C, s C, 1)
  (``phase_kernels.pixel_views``); the epilogue reads and writes those,
  splitting its row into (n, i, j) (``gemm.Epilogue.pixels``,
  pair_epilogue.at). TMA stores tiles of consecutive rows, so tc-sm90
  stores them from registers, 16 bytes a thread where the rows allow, as
  tc-sm80 does any output;
* the empty phases: one launch for them all, a thread 8 channels of a
  pixel (one where C is no multiple of 8), evaluates the fused epilogue on
  an accumulator of 0 at its pixels and stores it
  (``phase_kernels.empty_launch``), so dx is written everywhere and a fused
  epilogue (a bias, an activation's backward) sees what the unfused graph
  does.

A filter whose only phase with taps takes them all in the filter's order
(a 1 x 1 filter) is read where it lies, without the copy.

Taken for every strided data gradient, grouped ones too: their GEMMs'
batch is the groups, the epilogue's views ``[G, M, N]`` and the pixel
views ``[G, N, H_phi, W_phi, C/G]``. (It replaced a launch that wrote dy
with s - 1 zeros between its pixels, whose stride-1 gradient multiplied
the zeros too: prod(s) times the tensor-core work.)
"""

import math
from dataclasses import dataclass
from itertools import product


@dataclass(frozen=True)
class DimPhase:
    """One spatial dim of a stride phase: output rows s * i + ``phase`` for
    i < ``out``; ``taps``: the filter taps (cross-correlation order) the
    phase's stride-1 convolution applies, in its tap order u; its
    ``dilation``, ``pre`` and ``post`` padding over dy."""

    phase: int
    out: int
    taps: tuple
    dilation: int
    pre: int
    post: int


@dataclass(frozen=True)
class Phase:
    """A stride phase of every spatial dim (outermost first)."""

    dims: tuple

    @property
    def phase(self):
        return [d.phase for d in self.dims]

    @property
    def out(self):
        return [d.out for d in self.dims]

    @property
    def filter(self):
        return [len(d.taps) for d in self.dims]

    @property
    def taps(self):
        """The filter taps, each a tuple over the dims, in the phase's
        row-major tap order."""
        return list(product(*(d.taps for d in self.dims)))

    @property
    def empty(self):
        return any(not d.taps for d in self.dims)


def split_dim(size, dy_size, window, stride, dilation, pre):
    """The DimPhases of one spatial dim: dx's ``size`` rows, dy's
    ``dy_size``, ``window`` filter taps, the forward ``stride``,
    ``dilation`` and ``pre`` padding. Phases past dx (``size`` < s) are
    left out."""
    g = math.gcd(stride, dilation)
    step = stride // g                  # taps of one phase are s / g apart
    dl = dilation // g
    out = []
    for phi in range(min(stride, size)):
        rows = -(-(size - phi) // stride)
        taps = [r for r in range(window) if (phi + pre - r * dilation) % stride == 0]
        assert all(b - a == step for a, b in zip(taps, taps[1:]))
        if not taps:
            out.append(DimPhase(phi, rows, (), dl, 0, 0))
            continue
        t = len(taps)
        c0 = (phi + pre - taps[0] * dilation) // stride
        first = (t - 1) * dl - c0
        last = (rows - 1) + (t - 1) * dl - first - (dy_size - 1)
        out.append(DimPhase(phi, rows, tuple(reversed(taps)), dl, first, last))
    return out


def split(size, dy_size, window, stride, dilation, pre):
    """The Phases of a strided data gradient (lists per spatial dim, as
    split_dim takes them), in row-major phase order."""
    per_dim = [split_dim(*args) for args in zip(size, dy_size, window, stride, dilation, pre)]
    return [Phase(dims) for dims in product(*per_dim)]


def tap_index(tap, window, flip):
    """The flattened index in the filter's ``[K, taps, C]`` view of ``tap``
    (cross-correlation order per dim; ``flip``: the forward convolution is
    in convolution mode, its filter read reversed)."""
    index = 0
    for r, n in zip(tap, window):
        index = index * n + ((n - 1 - r) if flip else r)
    return index


def note(conv, split):
    """What the plan says of the split."""
    taps = "/".join(str(math.prod(p.filter)) for p in split)
    empty = sum(p.empty for p in split)
    zeros = f"; {empty} of no filter taps, written by the epilogue of 0" if empty else ""
    return (f"stride {conv.stride}: {len(split)} stride phases (tensorcore/phases.py), a "
            f"stride-1 GEMM each of {taps} filter taps x {conv.channels} channels{zeros}")

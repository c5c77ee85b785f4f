"""tc-sm80's tile and limits: ``Tile`` (a block's BM x BN x BK, stages,
warps and K splits, and the warp grid it makes), ``NotSupported``, and the
constants the loader, the mainloop and the checks share."""

from dataclasses import dataclass

WARP = 32
PAD = 16                 # bytes after each shared row: an odd pitch in 16-byte units
# Bytes after each line of an MN-major tf32 operand, whose fragments are
# scalar loads, not ldmatrix: a pitch of 8 words past a multiple of 32
# (loader.py).
TF32_MN_PAD = 32
MMA_K_BYTES = 32         # K bytes per mma: k16 of bf16 / f16, k8 of tf32
# Bytes of shared memory a block may use (opt-in): 227 KiB on sm_90; an
# sm_80 block gets 163 KiB, which the heuristics keep to (tc80_stages), and
# the runtime refuses a kernel that asks its device for more.
MAX_SHARED = 232448
MAX_ACCUMULATORS = 128   # f32 accumulator registers per thread


class NotSupported(Exception):
    """tc-sm80 does not take this GEMM; the message says why."""


@dataclass(frozen=True)
class Tile:
    m: int = 128
    n: int = 128
    k: int = 32
    stages: int = 4
    warps: int = 4
    # Blocks that share each tile's K steps (split-K: splitk.py).
    splits: int = 1

    @property
    def threads(self):
        return WARP * self.warps

    @property
    def warps_m(self):
        """Warps down M: of the grids whose warp tiles have 16 rows or more,
        the one whose warp tile reads the fewest fragments per K slice
        (warp_m / 16 ldmatrix of A, warp_n / 16 of B: the squarest tile),
        two on a tie, else the fewer. 8 warps of 128 x 256 are 2 x 4 of
        64 x 64, of 256 x 128 4 x 2 of 64 x 64; 4 warps of 128 x 128 2 x 2,
        of 64 x 128 2 x 2 of 32 x 64."""
        grids = [w for w in (1, 2, 4, 8) if self.warps % w == 0 and self.m // w >= 16
                 and self.n * w // self.warps >= 16]
        if not grids:
            return 1
        return min(grids, key=lambda w: (self.m // w + self.n * w // self.warps, w != 2, w))

    @property
    def warps_n(self):
        return self.warps // self.warps_m

    @property
    def warp_m(self):
        return self.m // self.warps_m

    @property
    def warp_n(self):
        return self.n // self.warps_n


def element_bytes(element):
    """Bytes of an operand element (f32 read as tf32: 4)."""
    return 4 if element == "f32" else 2

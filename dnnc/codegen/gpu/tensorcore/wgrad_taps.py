"""How a filter gradient's GEMM columns meet the filter taps, for the
tensor-core implicit GEMMs (conv.py, sm90/im2col.py, sm80/im2col.py) and
the heuristics that pick their tiles (dnnc/heuristics/contraction.py).

A filter gradient dw[K, taps, C] = dyᵀ · im2col(x) has its GEMM's N run
over (tap, channel). The loaders bring a tile's columns in as one tap's
channels (one TMA im2col load per 64 channels, or cp.async chunks from one
shifted pixel), so a tile does not straddle two taps, but where C leaves
no other way: tc-sm80's chunks can each find their own tap. Four layouts
follow:

* **whole tiles a tap** (C a multiple of ``TAP_TILE``, the narrowest tile
  either strategy's heuristics take): N = taps x C, tiles of a width that
  divides C; the epilogue stores [K, taps·C] rows as a matmul's.
* **one tap** (a 1x1 filter, any C): N = C; a tile's columns past C are
  computed on the loaders' zeros (TMA's out-of-bounds fill, cp.async's
  zero-size copies) and not stored, as any GEMM's last ragged tile.
* **taps as the GEMM's batch** (several taps, C not a multiple of
  ``TAP_TILE``, one group): batch = taps, N = C, each tap a [K, C] GEMM
  whose output is dw's columns tap·C onward (rows taps·C apart). A tile
  starts at a multiple of its width within its tap, the loaders zero-fill
  past C, and the epilogue, whose column bound is C, stores only the
  columns < C. The tiles compute ceil(C / BN)·BN columns a tap for C:
  MobileNetV2's C = 144 in tiles of 64 keeps 75% of the tensor-core work,
  C = 24 keeps 38%; a tile N dividing C (24, 48, 144 for wgmma) would keep
  it all, but B is read MN-major (x's channels contiguous) in TMA boxes of
  128 bytes with the 128-byte swizzle, which wgmma reads in atoms of 64
  columns, so a narrower N needs another swizzle mode throughout the
  engine: the zero-filled columns are the cheaper change, and they cost no
  memory traffic (TMA and cp.async fill them without reading).
  Rows of C are a multiple of 16 bytes here (C a multiple of 8 for 16-bit
  types), so that TMA steps them and each 16-byte chunk lies wholly in C
  or past it.
* **tiles that span taps** (several taps, rows of C not a multiple of 16
  bytes: odd C, C = 12; tc-sm80 only, tc-sm90's TMA cannot step such
  pixels, conv.Unaligned, but where C is below 8 and the filter's columns
  fold into the channels, fold.py, which tc-sm90 then runs with the outer
  taps as the batch): N = taps x C, any tile, each of a tile's chunks
  (for element-wise chunks, each element) computing its own tap and
  channel before the mainloop (sm80/im2col.py); the tiles compute
  ceil(taps·C / BN)·BN columns, the epilogue stores those < taps·C.

Where C is a multiple of 8 but not of 64 both the batched layout and tiles
spanning taps would do; the batched one is taken, on either strategy:
tc-sm90 (which cannot span taps) runs it, and on tc-sm80 a chunk's tap is
the batch index, not its column divided by C. Tiles span taps only where
nothing else reads C.

A grouped gradient of several taps and such a C has no layout here yet:
its batch would be (group, tap), whose output offsets are not one stride
(``problem`` says so).
"""

# The narrowest tile N of tc-sm90 (wgmma's B in 128-byte swizzled boxes of
# 64 columns) and of the heuristics' tc-sm80 tiles.
TAP_TILE = 64
# The rows of channels the batched layout reads: TMA's steps, and cp.async
# chunks that lie wholly in C or past it.
ROW_BYTES = 16


def tap_batched(groups, channels, taps, element_bytes=2):
    """Whether a filter gradient of ``groups`` groups of ``channels``
    channels of ``element_bytes`` bytes over ``taps`` filter taps runs with
    its taps as the GEMM's batch (see the module docstring)."""
    return groups == 1 and taps > 1 and channels % TAP_TILE != 0 and \
        channels * element_bytes % ROW_BYTES == 0


def spans_taps(channels, taps, element_bytes=2):
    """Whether a filter gradient's tiles may span filter taps: several
    taps, rows of C not a multiple of 16 bytes (tc-sm80 only; see the
    module docstring)."""
    return taps > 1 and channels * element_bytes % ROW_BYTES != 0


def tiles_in_tap(channels, taps):
    """Whether a tile's N must divide C (several taps in the GEMM's N)."""
    return taps > 1 and channels % TAP_TILE == 0


def problem(groups, channels, taps):
    """Why no tensor-core layout takes a filter gradient of ``groups``
    groups of ``channels`` channels over ``taps`` taps, or None."""
    if groups > 1 and taps > 1 and channels % TAP_TILE:
        return (f"a filter gradient of {groups} groups of C = {channels} channels over {taps} "
                f"filter taps: expected C a multiple of {TAP_TILE} (a tile lies in one tap), "
                "one filter tap, or one group (the taps are then the GEMM's batch, or a "
                "tile's columns span them)")
    return None


def covered(channels, bn):
    """Columns the tiles of width ``bn`` compute for a tap's ``channels``."""
    return -(-channels // bn) * bn


def note(conv, bn):
    """What the plan says of a convolution ``conv`` (conv.Conv) in tiles of
    ``bn`` columns where it is a filter gradient whose tiles cover more
    than C a tap; else ""."""
    if conv.direction != "wgrad" or conv.channels % bn == 0:
        return ""
    if conv.taps > 1 and not conv.tap_batched:
        return f" (a tile's {bn} columns may span filter taps: C = {conv.channels})"
    how = "the taps the GEMM's batch" if conv.tap_batched else "one tap"
    return (f" ({how}: {covered(conv.channels, bn)} columns a tap, those past C zero-filled "
            "and not stored)")

"""dnn-map-tensor-cores: lower every kernel whose ``dnn.config`` names a
tensor-core strategy to its tensor-core kernel, the kernel's pointwise
epilogue fused in registers:

* ``tc-sm90``: TMA descriptors on the host side and one ``gpu.launch``
  running the warp-specialized wgmma mainloop (dnnc/codegen/gpu/tensorcore/sm90/);
* ``tc-sm80``: one ``gpu.launch`` of cp.async copies into a shared-memory
  ring, ldmatrix and mma.sync (dnnc/codegen/gpu/tensorcore/sm80/); also what a
  ``tc-sm90`` kernel gets when tc-sm90 does not take it (f32 multiplied in
  a way it does not support, a stride TMA cannot describe),
  with the tile ``dnnc.heuristics.contraction.tc_sm80_configs`` ranks first.

A kernel whose function carries ``dnn.attention`` is one sdpa forward (or
backward): tc-sm90 replaces the body (its expansion) by the attention
kernel (sm90/flash.py, flash_backward.py, flash_backward_wide.py), tc-sm80 by its forward kernel
(sm80/flash.py; its tile from the config, else the first
``tc_sm80_attention_tiles`` ranks) or its backward kernels
(sm80/flash_backward.py; ``tc_sm80_attention_backward_tile``; the config's ``fused``:
sm80/flash_backward_fused.py); what a kernel does not take keeps the
expansion, on simt-generic. A kernel whose function carries ``dnn.conv`` is a convolution: each
strategy runs it as an implicit GEMM (tensorcore/conv.py) with its own
operand loaders (sm90/im2col.py: TMA's im2col mode; sm80/im2col.py: a
cp.async gather), matched for the tile's K step; one tc-sm90 does not take
goes to tc-sm80 likewise (its tiles from ``tc_sm80_conv``).

Runs in the ``gpu`` stage on bufferized kernel functions, before
convert-linalg-to-parallel-loops. The config's ``tile`` is ``[BM, BN, BK]``
and ``stages`` the depth of the shared-memory ring. The kernel must read as
one GEMM plus an elementwise epilogue (dnnc/codegen/gpu/tensorcore/gemm.py), and the
strategy must take it (operand types, TMA's 16-byte stride rule); otherwise
the kernel is left as it is and handed to simt-generic: its ``dnn.config``
becomes ``simt-generic`` and its ``dnn.config_reason`` says why (for a
tc-sm90 kernel: why neither tc-sm90 nor tc-sm80 takes it), so that the plan
shows what runs.

Before (C = A @ B + bias, bf16, config ``{block = [384, 1, 1], stages = 4,
strategy = "tc-sm90", tile = [128, 128, 64]}``)::

    linalg.generic ... outs(%c : memref<256x256xf32>)           // fill 0
    linalg.generic ... ins(%a, %b) outs(%c) [parallel, parallel, reduction]
    linalg.generic ... ins(%c, %bias) outs(%y : memref<256x256xbf16>)

After::

    %da = nvgpu.tma.create.descriptor %a' box[%c128, %c64] ...
    %pa = builtin.unrealized_conversion_cast %da : ... to !llvm.ptr
    ...   (B's descriptor; the output's: boxes of 16 rows by 128 bytes)
    gpu.launch blocks(...) in (%gx = %c4, ...) threads(...) in (%tx = %c384, ...)
        dynamic_shared_memory_size %c132160_i32 {
      nvvm.mbarrier.init ...
      scf.if %producer {  nvvm.setmaxregister decrease 40
                          ... nvvm.cp.async.bulk.tensor.shared.cluster.global ... }
      else {              nvvm.setmaxregister increase 232
                          scf.for ... { nvvm.wgmma.mma_async ... }
                          ... arith.addf ... llvm.store (a shared slot) ...
                          nvvm.cp.async.bulk.tensor.global.shared.cta ... }
    }

After, for ``strategy = "tc-sm80", tile = [64, 64, 32], stages = 3``::

    gpu.launch blocks(...) in (%gx = %c12, ...) threads(...) in (%tx = %c128, ...)
        dynamic_shared_memory_size %c29184_i32 {
      nvvm.cp.async.shared.global %dst, %src, 16, cache = cg, %bytes ...   // steps 0, 1
      nvvm.cp.async.commit.group
      scf.for %kt ... iter_args(%acc... : !llvm.struct<(f32, f32, f32, f32)>) {
        nvvm.cp.async.wait.group 1
        gpu.barrier
        scf.if ... { nvvm.cp.async.shared.global ... }                     // step kt + 2
        nvvm.cp.async.commit.group
        nvvm.ldmatrix ... nvvm.mma.sync A[...] B[...] C[...] ...
      }
      ... arith.addf ... vector.store ...
    }

Lit test: test/lit/passes/dnn_map_tensor_cores.mlir (tf32 convolution
gradients: dnn_map_tensor_cores_tf32_conv.mlir).
"""

import dataclasses
from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu.tensorcore import attention as attention_match
from dnnc.codegen.gpu.tensorcore import conv as conv_match
from dnnc.codegen.gpu.tensorcore import gemm as gemm_match
from dnnc.codegen.gpu.tensorcore import sm80, sm90
from dnnc.codegen.gpu.tensorcore.sm90.flash import FlashTile, build_attention
from dnnc.codegen.gpu.tensorcore.sm90.flash_backward_fused import (
    FusedTile, build_attention_backward_fused,
)
from dnnc.codegen.gpu.tensorcore.sm90.flash_backward_wide import build_attention_backward
from dnnc.heuristics.config import ATTR, Config, add_note, fall_back, hand_over, kernels_of
from dnnc.heuristics.contraction import (
    TC90_ATTENTION_TWO_KERNELS, tc80_k_bytes, tc80_split_config, tc80_stages,
    tc_sm80_attention_backward_tile, tc_sm80_attention_tiles, tc_sm80_configs, tc_sm80_conv,
)
from dnnc.heuristics.problem import SMS
from dnnc.passes import DnncPass, register

STRATEGY = "tc-sm90"
SIMT = "simt-generic, one thread per output"


def tile_of(config):
    """The sm90.Tile a config describes."""
    m, n, k = (tuple(config.tile) + (128, 128, 64)[len(config.tile):])[:3]
    # A consumer warpgroup per 64 rows of the tile (the block follows).
    return sm90.Tile(m, n, k, config.stages, max(1, m // 64), config.split, config.cluster,
                     tiled=bool(config.tiled), promote_overlap=config.promote_overlap,
                     tail_split=config.tail_split)


def sm80_tile_of(config, element):
    """The sm80.Tile a tc-sm80 config describes: a warp per 32 threads;
    without a tile, 128 x 128 x (the K step the heuristics give that many
    warps); stages 1 (a config that names none: the ring needs two) is as
    many as the heuristics would give the tile, within sm_80's shared
    memory (the pass does not know the arch; that budget fits both);
    ``split`` the blocks that share a tile's K (sm80/splitk.py)."""
    warps = max(1, config.threads // 32)
    k_default = tc80_k_bytes(warps) // (4 if element == "f32" else 2)
    m, n, k = (tuple(config.tile) + (128, 128, k_default)[len(config.tile):])[:3]
    stages = config.stages
    if stages == 1:
        stages = tc80_stages(m, n, warps, "sm_80")
    return sm80.Tile(m, n, k, max(2, stages), warps, max(1, config.split))


def sm80_refit_split(gemm, tile, fitted):
    """``fitted`` (``tile`` narrowed by sm80.fit_element_wise) with its K
    split scaled down by as much as its tiles of ``gemm`` outnumber
    ``tile``'s: the grid the heuristics sized stays the same."""
    if tile.splits == 1:
        return fitted

    def tiles(t):
        return -(-gemm.m // t.m) * -(-gemm.n // t.n)
    return dataclasses.replace(fitted, splits=max(1, tile.splits * tiles(tile) // tiles(fitted)))


def sm80_attention_tile_of(config, att):
    """The sm80.FlashTile a tc-sm80 config of attention ``att`` describes:
    ``tile`` = [query rows a block, kv rows a step (64 if left out)] over a
    warp per 32 threads, 2 stages unless it names more; without a tile
    (an override that names the strategy, and perhaps the stages), the
    first the heuristics rank for ``att``, whatever the block, in the
    stages the config names."""
    if config.tile:
        m, n = (tuple(config.tile) + (64,))[:2]
        return sm80.FlashTile(m, n, max(2, config.stages), max(1, config.threads // 32))
    ranked = tc_sm80_attention_tiles(att.sq, att.d, att.dv, att.bias is not None)
    return _named_stages(ranked[0] if ranked else sm80.FlashTile(), config)


def _named_stages(tile, config):
    """``tile`` in the stages ``config`` names (more than one), else as it is."""
    return dataclasses.replace(tile, stages=config.stages) if config.stages > 1 else tile


def sm80_backward_tile_of(config, att):
    """The sm80.BackwardTile a tc-sm80 config of attention backward ``att``
    describes: ``tile`` = [kv rows a dQ step, query rows a dK dV step] over
    a warp per 32 threads (16 rows each), 2 stages unless it names more;
    without a tile (an override that names the strategy, and perhaps the
    stages), the one the heuristics pick for ``att`` (or the default, which
    check then refuses with its reason), in the stages the config names."""
    if config.tile:
        n, m = (tuple(config.tile) + (32,))[:2]
        return sm80.BackwardTile(max(1, config.threads // 32), n, m, max(2, config.stages))
    return _named_stages(tc_sm80_attention_backward_tile(att.d, att.dv, att.bias is not None)
                         or sm80.BackwardTile(), config)


def _note_untiled_block(fn, config, threads):
    """Say in ``fn``'s plan where a tc-sm80 attention config that names no
    tile (an override naming the strategy) runs another block than its
    own: the warps are the tile's."""
    if not config.tile and config.threads != threads:
        add_note(fn, f"{threads} threads a block, the tile's, not the config's "
                     f"{config.threads}: an override sets the warps by naming a tile")


def sm80_fallback(found):
    """The tc-sm80 Config for a GEMM tc-sm90 does not take (sm_90a's SMs),
    its K split where its tiles leave SMs idle (tc80_split_config)."""
    config = tc_sm80_configs(found.m, found.n, found.batch, found.element, SMS["sm_90a"],
                             "", fallback=True)[0]
    return tc80_split_config(config, found.m, found.n, found.batch, found.k, SMS["sm_90a"])


@register
@dataclass
class DnnMapTensorCores(DnncPass):
    NAME = "dnn-map-tensor-cores"

    def run(self, module):
        with module.context, ir.Location.unknown():
            # Listed first: a tc-sm90 kernel handed to tc-sm80 is lowered once.
            sm90_kernels = list(kernels_of(module, STRATEGY))
            sm80_kernels = list(kernels_of(module, "tc-sm80"))
            for fn, config in sm90_kernels:
                self._sm90(fn, config)
            for fn, config in sm80_kernels:
                if attention_match.ATTR in fn.attributes:
                    self._sm80_attention(fn, config)
                    continue
                if conv_match.ATTR in fn.attributes:
                    self._sm80_conv(fn, config)
                    continue
                try:
                    found = gemm_match.match(fn)
                    asked = sm80_tile_of(config, found.element)
                    tile = sm80.fit_gemm(found, asked)
                    notes = sm80.build(fn, found, tile)
                    if tile != asked:
                        notes.append(f"tile narrowed to {tile.m}x{tile.n}x{tile.k} (the "
                                     "element-wise loads within the register budget)")
                except (gemm_match.NotAGemm, sm80.NotSupported) as why:
                    fall_back(fn, f"tc-sm80 does not apply ({why}): {SIMT}")
                    continue
                # The config records what runs (an override may name no tile;
                # element-wise loads narrow it: fit_gemm).
                fn.attributes[ATTR] = config.replace(
                    block=(tile.threads, 1, 1), tile=(tile.m, tile.n, tile.k),
                    stages=tile.stages).to_attr()
                for note in notes:
                    add_note(fn, note)

    def _sm90(self, fn, config):
        if attention_match.ATTR in fn.attributes:
            self._sm90_attention(fn, config)
            return
        if conv_match.ATTR in fn.attributes:
            self._sm90_conv(fn, config)
            return
        try:
            found = gemm_match.match(fn, block_scaled=True)
        except gemm_match.NotAGemm as why:
            fall_back(fn, f"{STRATEGY} does not apply ({why}): {SIMT}")
            return
        tile = tile_of(config)
        if found.epilogue.amax and tile.splits // tile.cluster > sm90.LAST_ARRIVAL_SPLITS:
            tile, config = self._amax_splits(fn, config, tile)
        try:
            notes = sm90.build(fn, found, tile)
        except sm90.NotSupported as why:
            not_sm90 = f"{STRATEGY} does not apply ({why})"
        else:
            for note in notes:
                add_note(fn, note)
            return
        if found.scales is not None:
            fall_back(fn, f"{not_sm90}, and tc-sm80 applies no block scales: {SIMT}")
            return
        fallback = sm80_fallback(found)
        try:
            tile = sm80.fit_gemm(found, sm80_tile_of(fallback, found.element))
            notes = sm80.build(fn, found, tile)
        except sm80.NotSupported as why:
            fall_back(fn, f"{not_sm90}, nor does tc-sm80 ({why}): {SIMT}")
            return
        shape = (tile.m, tile.n, tile.k)
        # The notes (the split; which loader reads each operand, and why)
        # beside why tc-sm90 does not apply, ahead of the heuristics' reason.
        hand_over(fn, Config("tc-sm80", (tile.threads, 1, 1), tile=shape, stages=tile.stages,
                             split=fallback.split),
                  "; ".join([f"{not_sm90}: tc-sm80 {'x'.join(map(str, shape))} tiles, "
                             f"{tile.stages} stages"] + notes))

    @staticmethod
    def _amax_splits(fn, config, tile):
        """(tile, config) of a GEMM whose epilogue takes an amax, with at most
        LAST_ARRIVAL_SPLITS partials a tile: the second launch that would
        sum more (sm90/splitk.py) evaluates the epilogue without it, while
        the GEMM's last arrival and a cluster's sum run the whole epilogue."""
        splits = tile.cluster * sm90.LAST_ARRIVAL_SPLITS
        add_note(fn, f"K split {splits} ways, not {tile.splits} (an amax in the epilogue: "
                     f"at most {sm90.LAST_ARRIVAL_SPLITS} partials a tile, summed by the last "
                     "to arrive)")
        config = config.replace(split=splits)
        fn.attributes[ATTR] = config.to_attr()
        return dataclasses.replace(tile, splits=splits), config

    def _sm90_attention(self, fn, config):
        """An sdpa kernel: tc-sm90's attention forward (sm90/flash.py), an
        sdpa_backward kernel its backward (sm90/flash_backward.py), else
        simt-generic on the expansion the body holds."""
        m, n = (tuple(config.tile) + (128, 128))[:2]
        try:
            if attention_match.op_of(fn) == "sdpa_backward":
                notes = self._sm90_attention_backward(fn, config)
            else:
                att = attention_match.match(fn)
                split, fold = max(1, config.split), max(1, config.fold)
                if att.ragged and (split > 1 or fold > 1):
                    # Split-KV's merge and a folded group's rows address
                    # padded rows: a ragged problem runs unsplit, unfolded.
                    split = fold = 1
                    config = config.replace(split=1, fold=1)
                    fn.attributes[ATTR] = config.to_attr()
                persistent = config.persistent
                if persistent and (split > 1 or fold > 1):
                    # A decode's split or folded blocks are one wave at most:
                    # they run a block a query tile.
                    persistent = 0
                    fn.attributes[ATTR] = config.replace(persistent=0).to_attr()
                    add_note(fn, "not persistent: the kv tiles split or query heads folded")
                notes = build_attention(fn, att, FlashTile(m, n, max(2, config.stages),
                                                           split, fold, persistent))
        except (attention_match.NotAnAttention, sm90.NotSupported) as why:
            fall_back(fn, f"{STRATEGY} does not apply ({why}): {SIMT}")
            return
        for note in notes:
            add_note(fn, note)

    def _sm90_attention_backward(self, fn, config):
        """An sdpa_backward kernel: the fused backward
        (sm90/flash_backward_fused.py) where the config's tile is [query
        rows a step, kv rows a block] other than [128, 128] (``persistent``:
        looping blocks; ``split``: the parts of a query-head group;
        ``staged``: D 64's consumers sum dQ's parts in shared memory), else (no tile,
        or [128, 128]: "128 rows a block", the deterministic mode) the
        two kernels (sm90/flash_backward.py); a fused kernel that does
        not take the problem goes to the two kernels, saying why."""
        att = attention_match.match_backward(fn)
        tile = tuple(config.tile[:2])
        if tile and tile != TC90_ATTENTION_TWO_KERNELS:
            try:
                return build_attention_backward_fused(
                    fn, att, FusedTile(tile[0], tile[1], max(2, config.stages),
                                       persistent=bool(config.persistent),
                                       parts=max(1, config.split),
                                       summed=bool(config.staged)))
            except sm90.NotSupported as why:
                add_note(fn, f"the fused backward does not apply ({why})")
        return build_attention_backward(fn, att)

    def _sm80_attention(self, fn, config):
        """An sdpa kernel configured tc-sm80: its attention forward
        (sm80/flash.py), an sdpa_backward its backward
        (sm80/flash_backward.py), else simt-generic on the expansion the
        body holds."""
        if attention_match.op_of(fn) == "sdpa_backward":
            self._sm80_attention_backward(fn, config)
            return
        try:
            att = attention_match.match(fn)
            tile = sm80_attention_tile_of(config, att)
            notes = sm80.build_attention(fn, att, tile)
        except (attention_match.NotAnAttention, sm80.NotSupported) as why:
            fall_back(fn, f"tc-sm80 does not apply ({why}): {SIMT}")
            return
        # The config records what runs (an override may name no tile).
        _note_untiled_block(fn, config, tile.threads)
        fn.attributes[ATTR] = config.replace(block=(tile.threads, 1, 1), tile=(tile.m, tile.n),
                                             stages=tile.stages).to_attr()
        for note in notes:
            add_note(fn, note)

    def _sm80_attention_backward(self, fn, config):
        """An sdpa_backward kernel configured tc-sm80: with ``fused = 1`` its
        fused kernel (sm80/flash_backward_fused.py), else (or where that
        does not take it, saying why) its two kernels
        (sm80/flash_backward.py), else simt-generic, saying why."""
        try:
            att = attention_match.match_backward(fn)
            tile = sm80_backward_tile_of(config, att)
            notes = None
            if config.fused:
                try:
                    notes = sm80.build_attention_backward_fused(fn, att, tile)
                except sm80.NotSupported as why:
                    add_note(fn, f"the fused backward does not apply ({why})")
                    config = config.replace(fused=0)
            if notes is None:
                notes = sm80.build_attention_backward(fn, att, tile)
        except (attention_match.NotAnAttention, sm80.NotSupported) as why:
            fall_back(fn, f"tc-sm80 does not apply ({why}): {SIMT}")
            return
        _note_untiled_block(fn, config, tile.threads)
        fn.attributes[ATTR] = config.replace(block=(tile.threads, 1, 1),
                                             tile=(tile.dq_n, tile.dkv_m),
                                             stages=tile.stages).to_attr()
        for note in notes:
            add_note(fn, note)

    def _sm90_conv(self, fn, config):
        """A convolution kernel: tc-sm90's implicit GEMM, else tc-sm80's
        (what tc-sm90 does not take for its loaders or tiles: an im2col box
        or a stride TMA cannot describe, channels not a multiple of 16
        bytes, a filter gradient's C), else simt-generic."""
        tile = tile_of(config)
        try:
            conv = conv_match.match(fn, tile.k)
        except conv_match.Unaligned as why:
            # Channels TMA cannot step: tc-sm80's loaders read them (the
            # GEMM's shape, for its tile, from its own match).
            not_sm90 = f"{STRATEGY} does not apply ({why})"
            try:
                conv = conv_match.match(fn, tile.k, "tc-sm80")
            except gemm_match.NotAGemm as why:
                fall_back(fn, f"{not_sm90}, nor does tc-sm80 ({why}): {SIMT}")
                return
            conv_match.discard(conv.made)
        except gemm_match.NotAGemm as why:
            fall_back(fn, f"{STRATEGY} does not apply ({why}): {SIMT}")
            return
        else:
            try:
                notes = sm90.build_conv(fn, conv, tile)
            except sm90.NotSupported as why:
                conv_match.discard(conv.made)
                not_sm90 = f"{STRATEGY} does not apply ({why})"
            else:
                for note in notes:
                    add_note(fn, note)
                return
            if conv.gemm.a.prologue is not None and tile.splits > 1 \
                    and self._sm90_conv_unsplit(fn, config, tile, not_sm90):
                return
        gemm = conv.gemm
        # (The K split, where the tiles leave SMs idle, is sized for the K of
        # tc-sm90's match: the same but where the K steps round C up.)
        fallbacks = tc_sm80_conv(gemm.m, gemm.n, gemm.element, SMS["sm_90a"], "",
                                 conv.channels if conv.tiles_in_tap else None,
                                 fallback=True, batch=gemm.batch, k=gemm.k)
        if not fallbacks:
            fall_back(fn, f"{not_sm90}, nor does tc-sm80 (no tile for "
                          f"{gemm.m}x{gemm.n}): {SIMT}")
            return
        fallback = fallbacks[0]
        try:
            notes, tile = self._build_sm80_conv(fn, sm80_tile_of(fallback, gemm.element))
        except (gemm_match.NotAGemm, sm80.NotSupported) as why:
            fall_back(fn, f"{not_sm90}, nor does tc-sm80 ({why}): {SIMT}")
            return
        # The tile that runs (narrowed for element-wise loads: fit_element_wise).
        shape = (tile.m, tile.n, tile.k)
        split = f", K split {tile.splits} ways" if tile.splits > 1 else ""
        hand_over(fn, Config("tc-sm80", (tile.threads, 1, 1), tile=shape, stages=tile.stages,
                             split=tile.splits),
                  f"{not_sm90}: tc-sm80 {'x'.join(map(str, shape))} tiles, "
                  f"{tile.stages} stages{split}")
        for note in notes:
            add_note(fn, note)

    @staticmethod
    def _sm90_conv_unsplit(fn, config, tile, not_sm90):
        """A convolution with a prologue on x whose K split tc-sm90 does
        not take (more splits than a short K's steps): tc-sm80 takes no
        prologue, so tc-sm90 runs it unsplit rather than simt-generic.
        False where that fails too."""
        unsplit = dataclasses.replace(tile, splits=1, cluster=1)
        try:
            conv = conv_match.match(fn, tile.k)
        except gemm_match.NotAGemm:
            return False
        try:
            notes = sm90.build_conv(fn, conv, unsplit)
        except sm90.NotSupported:
            conv_match.discard(conv.made)
            return False
        fn.attributes[ATTR] = config.replace(split=1, cluster=1).to_attr()
        add_note(fn, f"{not_sm90}: K unsplit (tc-sm80 takes no prologue on x)")
        for note in notes:
            add_note(fn, note)
        return True

    def _sm80_conv(self, fn, config):
        """A convolution kernel configured tc-sm80: its implicit GEMM, else
        simt-generic. Without a tile (an override that names none) a filter
        gradient's tile is narrowed to lie in one filter tap."""
        # (The default K step is a number of bytes: 16 tf32, 32 bf16 / f16.)
        tile = sm80_tile_of(config, conv_match.element_of(fn))
        try:
            notes, tile = self._build_sm80_conv(fn, tile, narrow=not config.tile)
        except (gemm_match.NotAGemm, sm80.NotSupported) as why:
            fall_back(fn, f"tc-sm80 does not apply ({why}): {SIMT}")
            return
        fn.attributes[ATTR] = config.replace(
            tile=(tile.m, tile.n, tile.k), stages=tile.stages, split=tile.splits).to_attr()
        for note in notes:
            add_note(fn, note)

    @staticmethod
    def _build_sm80_conv(fn, tile, narrow=False):
        """Match the convolution of ``fn`` for ``tile`` and build its tc-sm80
        kernel; (the notes for the plan, the tile it ran with) (``narrow``:
        a filter gradient's N narrowed to a divisor of C where ``tile``'s is
        not). A K split keeps its blocks where the tile is narrowed (more
        tiles, fewer splits: sm80_refit_split). On failure the views the
        match made are erased again."""
        conv = conv_match.match(fn, tile.k, "tc-sm80")
        if narrow and conv.tiles_in_tap and conv.channels % tile.n:
            n = next((n for n in (64, 32, 16) if n < tile.n and conv.channels % n == 0), None)
            tile = dataclasses.replace(tile, n=n) if n else tile
        try:
            fitted = sm80.fit_element_wise(conv, tile)
            if fitted.k != tile.k:
                # The match's K (each tap's channels in whole steps) is the
                # tile's K step's.
                conv_match.discard(conv.made)
                conv = conv_match.match(fn, fitted.k, "tc-sm80")
            tile = sm80_refit_split(conv.gemm, tile, fitted)
            return sm80.build_conv(fn, conv, tile), tile
        except sm80.NotSupported:
            conv_match.discard(conv.made)
            raise

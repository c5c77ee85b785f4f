"""The axes and vector widths of a transposing copy (transpose.py): which
dims merge, which axis is read along and which written along, how wide a
vector each side takes, and what is refused."""

import pytest

from dnnc.codegen.gpu.elementwise import transpose
from dnnc.codegen.gpu.elementwise.transpose import Axis, Copy, NotATranspose, copy_axes


def test_two_dims():
    # x[96, 200] -> y[200, 96]: loop dims (d0, d1) of y; x[d1, d0].
    c = copy_axes([200, 96], [1, 200], [96, 1])
    assert (c.r, c.k, c.batch) == (Axis(200, 1, 96), Axis(96, 200, 1), ())
    assert (transpose.read_width(c, 4), transpose.write_width(c, 4)) == (4, 4)


def test_nchw_to_nhwc_merges_h_and_w():
    # y[n, h, w, c] = x[n, c, h, w], x 2 x 24 x 7 x 9.
    sizes = [2, 7, 9, 24]
    src = [24 * 63, 9, 1, 63]
    dst = [63 * 24, 9 * 24, 24, 1]
    c = copy_axes(sizes, src, dst)
    assert c.r == Axis(63, 1, 24) and c.k == Axis(24, 63, 1)
    assert c.batch == (Axis(2, 24 * 63, 63 * 24),) and c.batches == 2
    # Rows of 63 bf16 take single elements; rows of 24 channels 16 bytes.
    assert (transpose.read_width(c, 2), transpose.write_width(c, 2)) == (1, 8)


def test_two_batch_axes_stay_apart():
    # y[5, 66, 3, 64] = x[3, 5, 64, 66] permuted [1, 3, 0, 2].
    sizes = [5, 66, 3, 64]
    src = [64 * 66, 1, 5 * 64 * 66, 66]
    dst = [66 * 3 * 64, 3 * 64, 64, 1]
    c = copy_axes(sizes, src, dst)
    assert c.r == Axis(66, 1, 192) and c.k == Axis(64, 66, 1)
    assert c.batch == (Axis(5, 4224, 12672), Axis(3, 21120, 64))


def test_unit_dims_are_dropped_and_offsets_limit_the_vectors():
    c = copy_axes([1, 64, 32], [0, 1, 64], [0, 32, 1], src_offset=6, dst_offset=8)
    assert c.batch == () and (c.r.size, c.k.size) == (64, 32)
    # f32: an offset of 6 elements allows 8-byte vectors only; 8 allows 16.
    assert (transpose.read_width(c, 4), transpose.write_width(c, 4)) == (2, 4)


@pytest.mark.parametrize("sizes,src,dst,why", [
    ([64, 32], [32, 1], [32, 1], "one axis to copy"),
    ([1, 1], [1, 1], [1, 1], "one element to copy"),
    # Contiguous along the same dim, the others swapped: a batch of rows.
    ([4, 5, 8], [8, 32, 1], [40, 8, 1], "contiguous along the same dim")])
def test_not_a_transpose(sizes, src, dst, why):
    with pytest.raises(NotATranspose, match=why):
        copy_axes(sizes, src, dst)


def test_threads_must_tile_the_rows():
    c = Copy(Axis(128, 1, 128), Axis(128, 128, 1))
    transpose.check_threads(256, c, 2)
    transpose.check_threads(64, c, 4)
    # fp8 rows: 4 threads a row of 64 (16-byte vectors); 512 threads would
    # read 128 rows of a 64-row tile.
    transpose.check_threads(256, c, 1)
    with pytest.raises(NotATranspose, match="blocks of 512 threads"):
        transpose.check_threads(512, c, 1)
    with pytest.raises(NotATranspose, match="blocks of 96 threads"):
        transpose.check_threads(96, c, 4)

"""When a convolution's activation is a plain matrix
(dnnc/codegen/gpu/tensorcore/pixel_rows.py): the geometry that allows it,
and the pixel pitch of the channels-last views whose pixels form one
matrix."""

import pytest

from dnnc.codegen.gpu.tensorcore import pixel_rows


def test_unit_convolutions_read_a_matrix():
    assert pixel_rows.problem("fprop", [1, 1], [1, 1], [0, 0], [0, 0]) is None
    assert pixel_rows.problem("dgrad", [1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0]) is None


@pytest.mark.parametrize("args, why", [
    (("wgrad", [1, 1], [1, 1], [0, 0], [0, 0]), "a filter gradient reads x as its B, MN-major"),
    (("fprop", [3, 1], [1, 1], [0, 0], [0, 0]), "a 3x1 filter (1x1 only)"),
    (("fprop", [1, 1], [1, 2], [0, 0], [0, 0]), "stride [1, 2] (unit stride only)"),
    (("fprop", [1, 1], [1, 1], [0, 1], [0, 0]), "padding [0, 1] / [0, 0] (none only)"),
    (("dgrad", [1, 1], [1, 1], [0, 0], [1, 0]), "padding [0, 0] / [1, 0] (none only)"),
    (("fprop", [1, 1], [1, 1], [0, 0], [0, 0], 2), "2 groups"),
    (("fprop", [1, 1], [1, 1], [0, 0], [0, 0], 1, True), "a prologue on x"),
])
def test_other_convolutions_say_why(args, why):
    assert pixel_rows.problem(*args) == why


@pytest.mark.parametrize("shape, strides, pitch", [
    # NHWC, dense: the pitch is C.
    ([2, 14, 14, 64], [14 * 14 * 64, 14 * 64, 64, 1], 64),
    # Pixels padded to 72 elements, rows and images dense in them.
    ([2, 5, 7, 64], [5 * 7 * 72, 7 * 72, 72, 1], 72),
    # Size-1 dims step by anything.
    ([1, 1, 9, 32], [12345, 777, 32, 1], 32),
    ([3, 1, 1, 16], [16, 5, 99, 1], 16),
    # One pixel.
    ([1, 1, 1, 8], [8, 8, 8, 1], 8),
    # 3-D: [N, D, H, W, C].
    ([2, 3, 4, 5, 16], [3 * 4 * 5 * 16, 4 * 5 * 16, 5 * 16, 16, 1], 16),
    # Rows apart by more than W pixels (a slice of a wider image): no matrix.
    ([2, 4, 5, 16], [4 * 6 * 16, 6 * 16, 16, 1], None),
    # Images apart by more than H rows (a slice of a larger batch).
    ([2, 4, 5, 16], [5 * 4 * 5 * 16, 5 * 16, 16, 1], None),
])
def test_dense_pitch(shape, strides, pitch):
    assert pixel_rows.dense_pitch(shape, strides) == pitch

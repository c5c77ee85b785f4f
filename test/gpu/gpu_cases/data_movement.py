"""Data movement cases: constants and gen_index, reshapes, transposes,
slices and concats, by 16-byte vectors, through shared-memory tiles and
element by element, on row-major, channels-last and transposed strides.
"""

import dnnc

from .case import BF16, E4M3, E5M2, F16, F32, Case, outputs
from .strides import channels_last


def constant_and_gen_index():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[7, 127])
    outputs(g.mul(x, g.constant(0.3)).set_name("scaled"), g.constant(2.5).set_name("c_f32"))
    for name, dtype, value in (("c_f16", F16, 0.1), ("c_bf16", BF16, -3.3),
                               ("c_e4m3", E4M3, 1000.0), ("c_e5m2", E5M2, 0.3)):
        outputs(g.cast(g.constant(value, data_type=dtype), dtype).set_name(name))
    outputs(g.gen_index(x, axis=1).set_name("index1"), g.gen_index(x, axis=0).set_name("index0"))
    return g


def tensor_ops(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[7, 5, 127])
        y = g.tensor(name="y", dim=[7, 2, 127])
        s = g.tensor(name="s", dim=[])
        mask = g.cmp_gt(x, s)
        outputs(g.reshape(x, [35, 127]).set_name("reshape"),
                g.reshape(x, [4445]).set_name("flatten"),
                g.reshape(g.slice(x, start=[1, 2, 3], limit=[2, 3, 4], step=[1, 1, 1]),
                          []).set_name("to_scalar"),
                g.reshape(s, [1, 1]).set_name("from_scalar"),
                g.transpose(x, [2, 0, 1]).set_name("transpose"),
                g.slice(x, [slice(1, 7), slice(0, 5, 2), slice(1, 127, 3)]).set_name("slice"),
                g.concat([x, y], axis=1).set_name("concat"),
                g.concat([x, x], axis=0).set_name("concat0"),
                g.transpose(mask, [1, 2, 0]).set_name("transpose_bool"),
                g.slice(mask, start=[0, 1, 0], limit=[7, 5, 127],
                        step=[2, 3, 2]).set_name("slice_bool"))
        return g
    return build


def tensor_copies(dtype):
    """Data movement by 16-byte vectors (simt-pointwise): reshapes, a heads
    transpose that keeps the innermost dim, slices and concats at vector
    boundaries, a strided graph input's layout copy, a bool transpose, a
    heads transpose with the cast and scale dnn-fuse joins to it; a
    transpose of the innermost dim (simt-transpose); and a slice that starts
    inside a vector, handed back to simt-generic."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[3, 40, 6, 32])
        heads = g.tensor(name="heads", dim=[3, 40, 6, 32], stride=[6 * 40 * 32, 32, 40 * 32, 1])
        a = g.tensor(name="a", dim=[40, 96])
        b = g.tensor(name="b", dim=[40, 32])
        outputs(g.reshape(x, [120, 192]).set_name("reshape"),
                g.transpose(x, [0, 2, 1, 3]).set_name("split_heads"),
                g.reshape(heads, [3, 40, 192]).set_name("merge_heads"),
                g.slice(a, [slice(None), slice(32, 64)]).set_name("slice_k"),
                g.slice(a, [slice(1, 40, 3), slice(8, 96)]).set_name("slice_rows"),
                g.concat([a, b], axis=1).set_name("concat_inner"),
                g.concat([b, b, b], axis=0).set_name("concat_rows"),
                g.transpose(g.cmp_gt(x, g.constant(0.0)), [2, 1, 0, 3]).set_name("transpose_bool"),
                g.transpose(a, [1, 0]).set_name("transpose_inner"),
                g.slice(a, [slice(None), slice(3, 35)]).set_name("slice_misaligned"),
                g.mul(g.cast(g.transpose(x, [0, 2, 1, 3]), F32 if dtype != F32 else BF16),
                      g.constant(0.5)).set_name("split_heads_cast"))
        return g
    return build


def transposes(dtype):
    """Transposes that move the innermost dim (simt-transpose: 64 x 64 tiles
    through shared memory): 2-D with ragged tiles and rows of every vector
    width (16-byte, 8-byte, one element), NCHW to NHWC and back (H and W
    merged), the last two dims of a batch, a permutation left with two
    batch axes; read from a channels-last input and written to an output
    declared with other strides, both where they lie; and the transposed
    copy of a graph input declared with transposed strides, and NHWC
    permuted to NCHW into an output declared channels-last (contiguous along
    the same dim as the result: plain copies of the flat buffers,
    simt-pointwise, one with a cast); with
    the pointwise ops dnn-fuse joins to a transpose applied as it copies (a
    cast to another type, a relu and a scale)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        a = g.tensor(name="a", dim=[100, 72])
        b = g.tensor(name="b", dim=[130, 200])
        odd = g.tensor(name="odd", dim=[37, 45])
        nchw = g.tensor(name="nchw", dim=[2, 24, 7, 9])
        nhwc = g.tensor(name="nhwc", dim=[2, 7, 9, 24])
        batch = g.tensor(name="batch", dim=[3, 130, 66])
        four = g.tensor(name="four", dim=[3, 5, 64, 66])
        a_t = g.tensor(name="a_t", dim=[72, 100], stride=[1, 72])
        x_cl = g.tensor(name="x_cl", dim=[2, 24, 7, 9], stride=channels_last([2, 24, 7, 9]))
        outputs(g.transpose(a, [1, 0]).set_name("t_100x72"),
                g.transpose(b, [1, 0]).set_name("t_130x200"),
                g.transpose(odd, [1, 0]).set_name("t_odd"),
                g.transpose(nchw, [0, 2, 3, 1]).set_name("nchw_to_nhwc"),
                g.transpose(nhwc, [0, 3, 1, 2]).set_name("nhwc_to_nchw"),
                g.transpose(batch, [0, 2, 1]).set_name("last_two"),
                g.transpose(four, [1, 3, 0, 2]).set_name("two_batch_axes"),
                g.transpose(a_t, [1, 0]).set_name("of_transposed_input"),
                g.transpose(x_cl, [0, 3, 1, 2]).set_name("channels_last_input"),
                g.transpose(batch, [0, 2, 1]).set_stride([130, 390, 1]).set_name(
                    "strided_output"),
                g.cast(g.transpose(b, [1, 0]), BF16 if dtype == F32 else F32).set_name(
                    "transpose_cast"),
                g.mul(g.relu(g.transpose(nchw, [0, 2, 3, 1])), g.constant(0.5)).set_name(
                    "transpose_relu_scale"),
                g.transpose(nhwc, [0, 3, 1, 2]).set_stride(channels_last([2, 24, 7, 9]))
                .set_name("nhwc_as_channels_last"),
                g.cast(g.transpose(nhwc, [0, 3, 1, 2]), BF16 if dtype == F32 else F32)
                .set_stride(channels_last([2, 24, 7, 9])).set_name("nhwc_as_channels_last_cast"))
        return g
    return build


def concat_chains(dtype):
    """Concats of three or four tensors (a chain of binary concats that
    dnn-fuse makes one kernel, each input copied once into its slab), a
    chain whose inner result is also returned (two kernels), and one that
    changes axis (two kernels)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        a = g.tensor(name="a", dim=[24, 40])
        b = g.tensor(name="b", dim=[24, 16])
        c = g.tensor(name="c", dim=[48, 8])
        inner = g.concat([a, b], axis=1).set_name("inner")
        outputs(g.concat([a, b, a, b], axis=1).set_name("four"),
                inner, g.concat([inner, a], axis=1).set_name("after_returned"),
                g.concat([g.concat([b, b], axis=0), c], axis=1).set_name("two_axes"),
                g.concat([b, a, b], axis=1).set_name("three"))
        return g
    return build


CASES = [
    Case("constant_gen_index_f32", constant_and_gen_index),
    *(Case(f"tensor_ops_{d.mlir}", tensor_ops(d)) for d in (F32, BF16)),
    *(Case(f"tensor_copies_{d.mlir}", tensor_copies(d)) for d in (F32, BF16)),
    *(Case(f"transposes_{d.mlir}", transposes(d)) for d in (F32, BF16)),
    *(Case(f"concat_chains_{d.mlir}", concat_chains(d)) for d in (F32, BF16)),
]

"""int8 and uint8 cases: convolutions and matmuls of int8 / uint8 operands
accumulated exactly in int32 (outputs int32, f32 and int8 saturated through
a relu), the int32 accumulator wrapping past 2^31, casts to and from the
byte types at their edges (ties, saturation, NaN), int8 data movement next
to booleans, and the graphs of cudnn-frontend's int8 tests written with
dnnc.frontend (test_conv_int8; the int8 casts of test_mixed_precision_matmul
and of the matmul fuzzer). Integer outputs are compared exactly.
"""

import dnnc
import dnnc.frontend as cudnn

from .case import BF16, F32, Case, contracted, outputs
from .strides import channels_last

I8, U8, I32 = dnnc.data_type.INT8, dnnc.data_type.UINT8, dnnc.data_type.INT32


def conv(dims, filter_dims, padding, stride=(1, 1), dilation=(1, 1), nhwc=False, x_type=I8):
    """One int8 (or uint8 image) convolution, three ways out: its int32
    sums, the same as f32, and relu(sums) saturated to int8."""
    def build():
        g = dnnc.Graph()
        x = g.tensor(name="x", dim=dims, stride=channels_last(dims) if nhwc else None,
                     data_type=x_type)
        w = g.tensor(name="w", dim=filter_dims,
                     stride=channels_last(filter_dims) if nhwc else None, data_type=I8)
        kw = dict(padding=list(padding), stride=list(stride), dilation=list(dilation))
        y = g.conv_fprop(x, w, **kw).set_name("y").set_data_type(I32)
        if nhwc:
            y.set_stride(channels_last(y.dim))
        yf = g.cast(g.conv_fprop(x, w, **kw), F32).set_name("y_f32")
        q = g.relu(g.cast(g.conv_fprop(x, w, **kw), F32)).set_name("relu_i8").set_data_type(I8)
        outputs(y, yf, q)
        return g
    return build


def matmuls():
    """int8 x int8 -> int32, batched with a broadcast A; int8 x uint8 -> f32
    with B stored N x K; int8 -> int8 saturated; and K = 140000 products of
    127 * 127, which wrap the int32 accumulator."""
    def build():
        g = dnnc.Graph()
        a = g.tensor(name="a", dim=[2, 1, 7, 127], data_type=I8)
        b = g.tensor(name="b", dim=[3, 127, 33], data_type=I8)
        u = g.tensor(name="u", dim=[127, 65], stride=[1, 127], data_type=U8)
        big_a = g.tensor(name="big_a", dim=[1, 140000], data_type=I8)
        big_b = g.tensor(name="big_b", dim=[140000, 2], data_type=I8)
        outputs(g.matmul(a, b).set_name("batched_i32").set_data_type(I32),
                g.matmul(a, u).set_name("uint8_b_f32").set_data_type(F32),
                g.matmul(a, b).set_name("saturated_i8").set_data_type(I8),
                g.matmul(big_a, big_b).set_name("wrapped_i32").set_data_type(I32))
        return g
    return build


def casts():
    """Casts at the byte types' edges, and int8 data moved beside booleans."""
    def build():
        g = dnnc.Graph()
        f = g.tensor(name="f", dim=[3, 1000], data_type=F32)
        i = g.tensor(name="i", dim=[3, 1000], data_type=I32)
        b = g.tensor(name="b", dim=[3, 1000], data_type=I8)
        u = g.tensor(name="u", dim=[3, 1000], data_type=U8)
        m = g.tensor(name="m", dim=[3, 1000], data_type=dnnc.data_type.BOOLEAN)
        outputs(g.cast(f, I8).set_name("f_i8"), g.cast(f, U8).set_name("f_u8"),
                g.cast(i, I8).set_name("i_i8"), g.cast(b, I32).set_name("b_i32"),
                g.cast(u, I8).set_name("u_i8"), g.cast(b, BF16).set_name("b_bf16"),
                g.cast(b, dnnc.data_type.BOOLEAN).set_name("b_bool"),
                g.transpose(g.slice(b, [slice(0, 3), slice(1, 1000, 3)]), [1, 0])
                .set_name("moved"),
                g.concat([b, g.cast(m, I8)], 0).set_name("with_mask"),
                g.cast(g.select(m, g.cast(u, F32), g.constant(-7.0)), I8).set_name("selected"))
        return g
    return build


# Values of f at the edges: ties to even, saturation, NaN and infinities.
CAST_EDGES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, 254.5, 255.5, 300.0, -128.5,
              -129.0, -1e9, 1e9, float("nan"), float("inf"), float("-inf"), 3.7, -3.7]
INT_EDGES = [-2**24, -129, -128, -1, 0, 1, 127, 128, 255, 256, 2**24, 77, -77, 1000]


def frontend_conv_int8(n, c, h, w, k):
    """test_conv_bias.py::test_conv_int8's graph: io INT8, intermediate and
    compute INT32, channels-last image and filter, identity to INT32."""
    def build():
        g = cudnn.pygraph(io_data_type=cudnn.data_type.INT8,
                          intermediate_data_type=cudnn.data_type.INT32,
                          compute_data_type=cudnn.data_type.INT32, name="frontend_int8")
        dims, fdims = [n, c, h, w], [k, c, 3, 3]
        x = g.tensor(name="x", dim=dims, stride=channels_last(dims))
        wt = g.tensor(name="w", dim=fdims, stride=channels_last(fdims))
        y = g.conv_fprop(image=x, weight=wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        out = g.identity(name="identity", input=y)
        out.set_output(True).set_data_type(cudnn.data_type.INT32).set_name("y")
        return g.to_dnnc()
    return build


def frontend_mixed_matmul(a_type, b_type, mma_type):
    """test_matmul_bias_relu.py::test_mixed_precision_matmul's graph: A and B
    (B column-major) cast by identity + set_data_type to the MMA type. The
    test views B with strides (N·K, 1, N), whose rows overlap in memory; here
    B is truly column-major (N·K, 1, K), so that the logical array stored as
    the package's input is the one the GPU reads."""
    names = {"int8": cudnn.data_type.INT8, "bf16": cudnn.data_type.BFLOAT16,
             "f16": cudnn.data_type.HALF, "f32": cudnn.data_type.FLOAT}

    def build():
        bsz, m, n, k = 16, 32, 64, 128
        g = cudnn.pygraph(name="frontend_mixed")
        a = g.tensor(name="a", dim=[bsz, m, k], data_type=names[a_type])
        b = g.tensor(name="b", dim=[bsz, k, n], stride=[n * k, 1, k], data_type=names[b_type])
        ac = g.identity(input=a, compute_data_type=cudnn.data_type.FLOAT)
        ac.set_data_type(names[mma_type])
        bc = g.identity(input=b, compute_data_type=cudnn.data_type.FLOAT)
        bc.set_data_type(names[mma_type])
        c = g.matmul(name="matmul", A=ac, B=bc, compute_data_type=cudnn.data_type.FLOAT)
        c.set_output(True).set_data_type(names[mma_type]).set_name("c")
        made = g.to_dnnc()
        contracted(made.outputs[0], made.inputs[0], made.inputs[1], k)
        return made
    return build


# int8 operands of the cudnn-frontend graphs are small (as its tests draw
# them: {-2..2}); their bf16 / f16 products and sums are exact.
_SMALL = ("a", "b")

CASES = [
    Case("int8_conv_nchw", conv([2, 8, 7, 9], [6, 8, 3, 3], (1, 1))),
    Case("int8_conv_nhwc_strided_dilated", conv([2, 16, 11, 10], [5, 16, 3, 2], (0, 2),
                                                (2, 1), (1, 2), nhwc=True)),
    Case("int8_conv_uint8_image", conv([1, 3, 33, 17], [4, 3, 5, 5], (2, 2), x_type=U8)),
    Case("int8_conv_grouped", conv([2, 8, 6, 6], [4, 4, 3, 3], (1, 1), nhwc=True)),
    Case("int8_matmul", matmuls(),
         fixed={"big_a": [127], "big_b": [127, -1]}),
    Case("int8_casts", casts(), fixed={"f": CAST_EDGES, "i": INT_EDGES}),
    Case("int8_frontend_conv_int8", frontend_conv_int8(2, 64, 32, 32, 4)),
    *(Case(f"int8_frontend_mixed_{a}_{b}_{mma}", frontend_mixed_matmul(a, b, mma),
           integers=_SMALL)
      for a, b, mma in (("int8", "int8", "bf16"), ("int8", "bf16", "bf16"),
                        ("f16", "int8", "f16"), ("int8", "int8", "f32"),
                        ("int8", "f16", "f32"))),
]

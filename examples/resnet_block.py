"""Build a small ResNet-style block with the graph API, print its dnn IR, run
it on the CPU back end and check it against the NumPy reference.

    python examples/resnet_block.py
"""

import numpy as np

import dnnc


def build():
    g = dnnc.Graph(name="resnet_block", io_data_type=dnnc.data_type.FLOAT)
    # NHWC in memory: the dims stay logical (N, C, H, W), the strides say channels-last.
    x = g.tensor(name="x", dim=[2, 8, 9, 9], stride=[8 * 81, 1, 9 * 8, 8])
    w1 = g.tensor(name="w1", dim=[8, 8, 3, 3])
    b1 = g.tensor(name="b1", dim=[1, 8, 1, 1])
    w2 = g.tensor(name="w2", dim=[8, 8, 3, 3])
    b2 = g.tensor(name="b2", dim=[1, 8, 1, 1])
    h = g.relu(g.add(g.conv_fprop(x, w1, padding=1), b1))
    h = g.add(g.conv_fprop(h, w2, padding=1), b2)
    y = g.relu(g.add(h, x), name="out")
    y.set_output(True)
    return g


def main():
    g = build()
    print(g.to_mlir())
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.standard_normal(t.dim).astype(np.float32) for t in g.inputs}
    expected = g.execute_reference(inputs)
    exe = g.compile(target="cpu")
    got = exe(**inputs)
    for name, value in got.items():
        err = np.max(np.abs(np.asarray(value, np.float64) - expected[name]))
        print(f"{name}: shape {value.shape}, max |cpu - reference| = {err:.2e}")


if __name__ == "__main__":
    main()

"""The fast path's generated argument checks (runtime/dnnc_runtime/steady_checks.py).

The checks are compiled for plain torch CPU tensors here (the device they
expect is the CPU), so nothing is stubbed: each case changes one property
of one argument and expects what the loop they replace did: MISS for a
dtype, dims, device or alignment the fast path does not serve, the
general path's ArgumentError for strides, acceptance (remembered) for
strides that differ only on size-1 dims, and the addresses otherwise.
"""

import traceback

import pytest

from dnnc_runtime import ArgumentError, binding, steady_checks
from dnnc_runtime.artifact import TensorSpec

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

MISS = object()
CPU = torch.device("cpu")

SPECS = (
    TensorSpec("x", "input", 0, (8, 16, 1, 1), (16, 1, 16, 16), "bf16"),   # channels-last
    TensorSpec("eps", "input", 1, (), (), "f32", by_value=True),
    TensorSpec("y", "output", 0, (8, 16), (16, 1), "f32"),                  # packed
    TensorSpec("m", "output", 1, (8, 1), (1, 1), "f32", alignment=4),       # packed
)


def compiled(specs=SPECS):
    expected = steady_checks.expected_strides(specs)

    def strides_differ(i, t):
        got = t.stride()
        binding.check_strides(specs[i], got)
        if expected[i] is not None:
            expected[i] = got

    def scalar_bits(value, spec):
        return ("bits", value)

    check = steady_checks.compile_checks(specs, torch.Tensor, binding.torch_dtype, CPU,
                                         expected, strides_differ, scalar_bits, MISS)
    return check, expected


def arguments():
    x = torch.zeros(8, 16, 1, 1, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    return [x, 1e-5, torch.zeros(8, 16), torch.zeros(8, 1)]


def test_good_arguments_give_their_addresses_and_the_scalar():
    check, expected = compiled()
    args = arguments()
    assert expected == [(16, 1, 16, 16), None, None, None]   # packed: is_contiguous answers
    assert check(args) == [args[0].data_ptr(), ("bits", 1e-5), args[2].data_ptr(),
                           args[3].data_ptr()]
    assert check(tuple(args)) == check(args)
    assert "if not t2.is_contiguous():" in check.source
    assert "if t0.stride() != E[0]:" in check.source


@pytest.mark.parametrize("index, value", [
    (0, torch.zeros(8, 16, 1, 1).to(memory_format=torch.channels_last)),   # dtype
    (2, torch.zeros(8, 17)),                                                # dims
    (2, torch.zeros(8, 16, dtype=torch.half)),                              # dtype
    (3, "not a tensor"),
])
def test_what_the_fast_path_does_not_serve_is_a_miss(index, value):
    check, _ = compiled()
    args = arguments()
    args[index] = value
    assert check(args) is MISS


def test_another_device_and_a_misaligned_address_are_misses():
    specs = SPECS[2:]
    expected = steady_checks.expected_strides(specs)
    check = steady_checks.compile_checks(specs, torch.Tensor, binding.torch_dtype,
                                         torch.device("meta"), expected, None, None, MISS)
    assert check(arguments()[2:]) is MISS                        # CPU tensors, meta expected
    check, _ = compiled()
    args = arguments()
    storage = torch.zeros(8 * 16 + 1)
    args[2] = storage[1:].view(8, 16)                            # 4 bytes past 16
    assert check(args) is MISS
    storage = torch.zeros(9)
    args = arguments()
    args[3] = storage[1:].view(8, 1)                             # m asks only 4: fine
    assert check(args)[3] == storage.data_ptr() + 4


def test_bad_strides_raise_the_general_paths_error_every_time():
    check, _ = compiled()
    for _ in range(2):
        args = arguments()
        args[0] = torch.zeros(16, 8, 1, 1, dtype=torch.bfloat16).permute(1, 0, 2, 3)
        with pytest.raises(ArgumentError, match=r"input 'x': expected strides "
                                                r"\[16, 1, 16, 16\].*got \[1, 8, 1, 1\]"):
            check(args)
        args = arguments()
        args[2] = torch.zeros(16, 8).t()                                   # column-major
        with pytest.raises(ArgumentError, match=r"output 'y': expected strides \[16, 1\]"
                                                r".*got \[1, 8\]") as info:
            check(args)
    # The traceback shows the generated line that called the judge.
    text = "".join(traceback.format_tb(info.value.__traceback__))
    assert "strides_differ(2, t2)" in text


def test_strides_that_differ_on_size1_dims_are_judged_once_and_remembered():
    check, expected = compiled()
    args = arguments()
    x = torch.zeros(8, 16, 1, 1, dtype=torch.bfloat16).as_strided((8, 16, 1, 1),
                                                                    (16, 1, 7, 5))
    args[0] = x
    assert check(args)[0] == x.data_ptr()
    assert expected[0] == (16, 1, 7, 5)
    assert check(arguments())[0] is not MISS        # the manifest's strides pass again
    assert expected[0] == (16, 1, 16, 16)
    m = torch.zeros(8, 3)[:, :1]                    # (3, 1): strides differ on dim 0 (size 8)
    args = arguments()
    args[3] = m
    with pytest.raises(ArgumentError, match=r"output 'm': expected strides \[1, 1\]"):
        check(args)
    args[3] = torch.zeros(8, 1).as_strided((8, 1), (1, 9))   # only the size-1 dim differs
    assert check(args)[3] == args[3].data_ptr()


def test_no_arguments_and_one_argument():
    check, _ = compiled(())
    assert check(()) == []
    check, _ = compiled(SPECS[2:3])
    y = torch.zeros(8, 16)
    assert check([y]) == [y.data_ptr()]


def test_any_tensor_name_makes_a_comment_line():
    specs = (TensorSpec("x\nreturn MISS\r\x00\u00e9", "input", 0, (4,), (1,), "f32"),)
    check, _ = compiled(specs)
    x = torch.zeros(4)
    assert check([x]) == [x.data_ptr()]
    assert "\\n" in check.source.splitlines()[2]       # the comment, escaped

"""The shared checks of kernel_builds.py on made-up ptxas resources and SASS
(no compiler, no ptxas): each passes on a kernel within budget and fails,
naming the kernel or the values, on one that is not; ``Builds`` compiles a
name once per (arch, override) and hands the override to the options as
the file spells it."""

import pytest

import dnnc
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.ptxas import KernelResources
from kernel_builds import (Builds, assert_fit, assert_no_local_memory, assert_no_spills,
                           assert_setmaxnreg_fits, assert_shared_fit, atomics, family,
                           register_budget)

SASS = """
\t\tFunction : k0
        /*0000*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR28].tnspB, R24, gsb0 ;
        /*0010*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0020*/                   REDG.E.ADD.F32.FTZ.RN.STRONG.GPU [R2.64], R5 ;
        /*0030*/                   EXIT ;
\t\t..........

\t\tFunction : k1
        /*0000*/                   STL [R1], R2 ;
        /*0010*/                   EXIT ;
"""
FUNCTIONS = sass.functions(SASS)


def kernel(entry, block=(384, 1, 1), shared=1024):
    return {"entry": entry, "block": list(block), "shared_bytes": shared}


def test_register_budget():
    assert register_budget(kernel("k", (384, 1, 1))) == 168
    assert register_budget(kernel("k", (128, 2, 1))) == 256
    assert register_budget(kernel("k", (128, 1, 1)), most=255) == 255


def test_assert_fit():
    fits = {"k": KernelResources(registers=168, shared_bytes=16)}
    assert_fit([kernel("k")], fits, max_shared=1040)
    with pytest.raises(AssertionError, match="'k'"):
        assert_fit([kernel("k")], {"k": KernelResources(registers=176)})
    with pytest.raises(AssertionError, match="'k'"):
        assert_fit([kernel("k")], {"k": KernelResources(registers=0)})
    with pytest.raises(AssertionError, match="1024"):
        assert_fit([kernel("k")], fits, max_shared=1039)
    with pytest.raises(AssertionError, match="'k'"):
        assert_fit([kernel("k", (128, 1, 1))], {"k": KernelResources(registers=256)},
                   most_registers=255)


def test_assert_no_spills_and_shared_fit():
    for spilled in (KernelResources(registers=8, spill_stores=4),
                    KernelResources(registers=8, spill_loads=4),
                    KernelResources(registers=8, stack_bytes=8)):
        with pytest.raises(AssertionError, match="'k'"):
            assert_no_spills([kernel("k")], {"k": spilled})
    assert_shared_fit([kernel("k")], {"k": KernelResources(shared_bytes=16)}, 1040)
    with pytest.raises(AssertionError):
        assert_shared_fit([kernel("k")], {"k": KernelResources(shared_bytes=17)}, 1040)


def test_local_memory_families_atomics():
    assert_no_local_memory([kernel("k0")], FUNCTIONS)
    with pytest.raises(AssertionError, match="'k1', 0, 1"):
        assert_no_local_memory([kernel("k0"), kernel("k1")], FUNCTIONS)
    counts = sass.opcodes(FUNCTIONS["k0"])
    assert family(counts, "HGMMA.") == {"HGMMA.64x128x16.F32.BF16"}
    assert family(counts, "HMMA.") == {"HMMA.16816.F32"}
    assert atomics(counts) == {"REDG", "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU"}
    assert atomics(sass.opcodes(FUNCTIONS["k1"])) == set()


def _setmaxnreg(producer, consumer):
    return sass.functions(f"""
\t\tFunction : k
        /*0300*/                   USETMAXREG.DEALLOC.CTAPOOL {producer:#x} ;
        /*0bb0*/                   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, {consumer:#x} ;
        /*0bc0*/                   EXIT ;
""")


def test_assert_setmaxnreg_fits():
    """A producer at 24 and two consumers at 240 fit a block of 384
    threads at 168 registers (64512); the producer at 32 does not: the
    second consumer's TRY_ALLOC would wait forever."""
    at_168 = {"k": KernelResources(registers=168)}
    assert_setmaxnreg_fits([kernel("k")], at_168, _setmaxnreg(24, 240))
    assert_setmaxnreg_fits([kernel("k")], at_168, _setmaxnreg(40, 232))
    with pytest.raises(AssertionError, match="65536 registers asked, the block holds 64512"):
        assert_setmaxnreg_fits([kernel("k")], at_168, _setmaxnreg(32, 240))
    # Three consumers at 160 beside 24 in 512 threads at 128.
    assert_setmaxnreg_fits([kernel("k", (512, 1, 1))], {"k": KernelResources(registers=128)},
                           _setmaxnreg(24, 160))
    assert_setmaxnreg_fits([kernel("k")], at_168, FUNCTIONS | {"k": ""})


def matmul(name):
    g = dnnc.Graph(name=name, io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[64, 64])
    b = g.tensor(name="b", dim=[64, 64])
    g.matmul(a, b).set_output(True)
    return g


def test_builds_compile_once_per_arch_and_override():
    made = []

    def graph(name):
        made.append(name)
        return matmul(name)

    built = Builds(graph, "sm_80",
                   config=lambda name, override: f"*=strategy:{override}" if override else None)
    package = built.package("mm")
    assert built.package("mm") is package and built.package("mm", "sm_80") is package
    assert [k["strategy"] for k in package.kernels] == ["tc-sm80"], package.kernels
    forced = built.package("mm", "sm_90a", "tc-sm80")
    assert forced is not package and built.package("mm", "sm_90a", "tc-sm80") is forced
    assert [k["strategy"] for k in forced.kernels] == ["tc-sm80"], forced.kernels
    assert made == ["mm", "mm"]

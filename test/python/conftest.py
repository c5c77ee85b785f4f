"""pytest's assertion rewriting for the checks the tests share
(kernel_builds.py), so that a failed one shows its values as an assert in
a test module does.

Packages compiled by the tests carry no cubin unless DNNC_CUBIN says
otherwise: the suite compiles hundreds of packages, and ptxas would add
about 40% to their compile time (docs/artifact.md, "Cubins") for code no
test runs. The tests that check kernels with ptxas run it themselves
(kernel_builds.py), and test_cubin.py turns cubins on where it tests them.
Run with DNNC_CUBIN=1 to compile every package as users get them."""

import os

import pytest

os.environ.setdefault("DNNC_CUBIN", "0")

pytest.register_assert_rewrite("kernel_builds")

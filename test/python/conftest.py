"""pytest's assertion rewriting for the checks the tests share
(kernel_builds.py), so that a failed one shows its values as an assert in
a test module does."""

import pytest

pytest.register_assert_rewrite("kernel_builds")

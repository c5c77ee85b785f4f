"""runtime/dnnc_runtime/record.py: ``Record`` behaves as the frozen
dataclasses it replaced in the runtime's manifest types (artifact.py), and
the runtime imports no ``dataclasses`` (whose generated methods cost every
new process about 4 ms, a JIT cache hit's included)."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from dnnc_runtime.artifact import KernelSpec
from dnnc_runtime.record import Field, FrozenInstanceError, Record

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Spec(Record):
    name: str
    dims: tuple
    alignment: int = 16
    config: dict = Field(factory=dict, compare=False)
    data: bytes = Field(b"", repr=False)


@dataclasses.dataclass(frozen=True)
class SpecAsDataclass:
    name: str
    dims: tuple
    alignment: int = 16
    config: dict = dataclasses.field(default_factory=dict, hash=False, compare=False)
    data: bytes = dataclasses.field(default=b"", repr=False)


BOTH = [Spec, SpecAsDataclass]


@pytest.mark.parametrize("cls", BOTH)
def test_fields_by_position_keyword_default_and_factory(cls):
    a = cls("x", (2, 3))
    assert (a.name, a.dims, a.alignment, a.config, a.data) == ("x", (2, 3), 16, {}, b"")
    b = cls("x", dims=(2, 3), alignment=8, data=b"\x7fELF")
    assert (b.alignment, b.data) == (8, b"\x7fELF")
    assert cls("y", ()).config is not cls("y", ()).config   # a new dict each


@pytest.mark.parametrize("cls", BOTH)
def test_bad_arguments_raise_type_error(cls):
    with pytest.raises(TypeError):
        cls("x")                              # dims missing
    with pytest.raises(TypeError):
        cls("x", (1,), 16, {}, b"", "extra")
    with pytest.raises(TypeError):
        cls("x", (1,), name="again")
    with pytest.raises(TypeError):
        cls("x", (1,), colour="red")


@pytest.mark.parametrize("cls", BOTH)
def test_frozen(cls):
    a = cls("x", (1,))
    with pytest.raises(AttributeError):
        a.name = "y"
    with pytest.raises(AttributeError):
        del a.dims
    assert a.name == "x"


def test_frozen_error_is_the_records_own():
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'alignment'"):
        Spec("x", (1,)).alignment = 4


@pytest.mark.parametrize("cls", BOTH)
def test_equality_and_hash_leave_out_uncompared_fields(cls):
    a, b = cls("x", (1,), config={"block": 128}), cls("x", (1,), config={"block": 64})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert cls("x", (1,)) != cls("x", (2,))
    assert cls("x", (1,), data=b"1") != cls("x", (1,), data=b"2")


def test_equality_is_within_one_class():
    assert Spec("x", (1,)) != SpecAsDataclass("x", (1,))


def test_repr_matches_the_dataclass():
    a = Spec("x", (1,), config={"k": 1}, data=b"secret")
    d = SpecAsDataclass("x", (1,), config={"k": 1}, data=b"secret")
    assert repr(a) == repr(d).replace("SpecAsDataclass", "Spec")
    assert "secret" not in repr(a)


def test_a_required_field_after_a_default_is_refused():
    with pytest.raises(TypeError, match="'late' without a default follows 'early'"):
        class Bad(Record):   # noqa: F841 - made to fail
            early: int = 0
            late: int


def test_kernel_spec_compares_without_its_config():
    kw = dict(name="k", entry="k_0", strategy="simt-reduce", grid=(1, 1, 1), block=(128, 1, 1),
              shared_bytes=0, args=())
    assert KernelSpec(**kw, config={"block": [128]}) == KernelSpec(**kw)
    assert KernelSpec(**kw).config == {} and KernelSpec(**kw).reason == ""


def test_import_dnnc_runtime_imports_no_dataclasses():
    script = ("import sys, json; import dnnc_runtime; "
              "print(json.dumps('dataclasses' in sys.modules))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=env)
    assert json.loads(run.stdout.strip().splitlines()[-1]) is False, \
        "import dnnc_runtime imported dataclasses"

"""The tensor-core engine's parts implement the interfaces that
dnnc/codegen/gpu/tensorcore/interfaces.py documents: every method and
property a protocol names, with the same parameters."""

import dataclasses
import inspect
from types import SimpleNamespace

import pytest

from dnnc.codegen.gpu.tensorcore import interfaces
from dnnc.codegen.gpu.tensorcore.sm80 import im2col as sm80_im2col
from dnnc.codegen.gpu.tensorcore.sm80.loader import AsyncOperand
from dnnc.codegen.gpu.tensorcore.sm90.epilogue import Epilogue
from dnnc.codegen.gpu.tensorcore.sm90.im2col import FilterOperand, Im2colOperand
from dnnc.codegen.gpu.tensorcore.sm90.mainloop import Consumer, Producer
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import TileScheduler
from dnnc.codegen.gpu.tensorcore.sm90.support import Tile
from dnnc.codegen.gpu.tensorcore.sm90.tma import TmaOperand

IMPLEMENTATIONS = [
    (interfaces.OperandLoader, TmaOperand),
    (interfaces.OperandLoader, Im2colOperand),
    (interfaces.OperandLoader, FilterOperand),
    (interfaces.TileScheduler, TileScheduler),
    (interfaces.Role, Producer),
    (interfaces.Role, Consumer),
    (interfaces.Epilogue, Epilogue),
    (interfaces.CopyLoader, AsyncOperand),
    (interfaces.CopyLoader, sm80_im2col.Im2colOperand),
    (interfaces.CopyLoader, sm80_im2col.FilterOperand),
]


def _members(protocol):
    """The methods and properties a protocol declares (not its data)."""
    return {name: value for name, value in vars(protocol).items()
            if not name.startswith("_") and (inspect.isfunction(value)
                                             or isinstance(value, property))}


@pytest.mark.parametrize("protocol, cls", IMPLEMENTATIONS,
                         ids=[f"{p.__name__}-{c.__name__}" for p, c in IMPLEMENTATIONS])
def test_implementation_has_every_member(protocol, cls):
    members = _members(protocol)
    assert members, f"{protocol.__name__} declares nothing to check"
    for name, declared in members.items():
        got = getattr(cls, name, None)
        assert got is not None, f"{cls.__name__} lacks {protocol.__name__}.{name}"
        if isinstance(declared, property):
            assert isinstance(got, property), \
                f"{cls.__name__}.{name}: expected a property, got {type(got).__name__}"
            continue
        want = list(inspect.signature(declared).parameters)
        have = list(inspect.signature(got).parameters)
        assert have == want, f"{cls.__name__}.{name}{tuple(have)}: expected {tuple(want)}"


@pytest.mark.parametrize("cls", [TmaOperand, Im2colOperand, FilterOperand])
def test_loader_data_is_declared_fields(cls):
    fields = {f.name for f in dataclasses.fields(cls)}
    for name in interfaces.OperandLoader.__annotations__:
        assert name in fields, f"{cls.__name__} has no field {name}"


def test_scheduler_data():
    gemm = SimpleNamespace(m=1000, n=300, k=4096, batch=2)
    scheduler = TileScheduler(gemm, Tile(128, 128, 64, splits=3), ctas=132)
    for name in interfaces.TileScheduler.__annotations__:
        assert isinstance(getattr(scheduler, name), int), name
    # 8 x 3 tiles a batch, 2 batches, K's 64 steps split 3 ways (22, 22, 20).
    assert (scheduler.steps, scheduler.splits, scheduler.units, scheduler.ctas) == \
        (64, 3, 8 * 3 * 2 * 3, 132)

"""bench/frontend_vs_cudnn.py's --save-plans / --plans: dnnc's plans compiled
for a GPU where MLIR is, serialized with each role's uid, and read back
without the compiler, their variant packs keyed by uid."""

import json
import os

import pytest

import benchutil

torch = pytest.importorskip("torch")
fvc = benchutil.load("frontend_vs_cudnn", "frontend_vs_cudnn.py")


def test_saved_plans_keep_roles_and_read_back(tmp_path):
    fvc.save_plans(str(tmp_path), [768], "sm_90a")
    names = sorted(os.listdir(tmp_path))
    assert names == sorted(f"{k}_{p}_768.{ext}" for k in fvc.KINDS for p in fvc.PHASES
                           for ext in ("plan", "json"))
    g, roles = fvc.saved_plan(str(tmp_path), "layernorm", "training", 768)
    assert set(roles) == {"x", "scale", "bias", "epsilon", "y", "mean", "inv_var"}
    plan = g._last_plan
    by_uid = {t.get_uid(): t for t in (*plan.inputs, *plan.outputs)}
    assert set(by_uid) == set(roles.values())
    assert by_uid[roles["x"]].get_name() == "X"
    assert by_uid[roles["x"]].get_dim() == [fvc.ROWS, 768, 1, 1]
    assert by_uid[roles["inv_var"]] in plan.outputs
    assert plan.target == "cuda"
    # The pack of a saved plan is keyed by uid, outputs included.
    data = fvc.make_data("layernorm", "training", 768, device="cpu")
    outs = fvc.alloc_outputs("layernorm", "training", data)
    pack = fvc.pack(roles, data, outs)
    assert set(pack) == set(roles.values())
    with open(tmp_path / "rmsnorm_backward_768.json") as f:
        assert set(json.load(f)) == {"x", "scale", "dy", "inv_var", "dx", "dscale"}


def test_plans_need_no_probe():
    with pytest.raises(SystemExit):
        fvc.main(["--plans", "somewhere"])

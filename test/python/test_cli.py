"""The command-line tools' answers to bad input and their verdicts: every
error names the file it is about and exits non-zero, ``dnnc run`` says
whether the CPU agreed with the reference, ``dnnc --version`` answers."""

import pytest

import dnnc
from dnnc import cli, opt
from dnnc.version import __version__


def _graph_file(tmp_path):
    g = dnnc.Graph(name="g", io_data_type="f32")
    x = g.tensor(name="x", dim=[4, 16])
    g.softmax(g.relu(x), axis=1).set_output(True)
    path = tmp_path / "g.mlir"
    path.write_text(g.to_mlir())
    return str(path)


def test_opt_names_a_missing_input_and_fails(tmp_path, capsys):
    missing = str(tmp_path / "nope.mlir")
    assert opt.main([missing]) == 1
    err = capsys.readouterr().err
    assert err == f"dnnc-opt: error: cannot read '{missing}': No such file or directory\n"


def test_opt_names_an_unwritable_output(tmp_path, capsys):
    src = _graph_file(tmp_path)
    out = str(tmp_path / "no" / "such" / "out.mlir")
    assert opt.main([src, "-o", out]) == 1
    assert f"cannot write '{out}'" in capsys.readouterr().err


def test_compile_names_the_package_path_it_cannot_write(tmp_path, capsys):
    src = _graph_file(tmp_path)
    out = str(tmp_path / "no" / "such" / "g.dnnpkg")
    assert cli.main(["compile", src, "--arch", "sm_90a", "-o", out]) == 1
    err = capsys.readouterr().err
    assert f"cannot write '{out}'" in err
    assert ".dnnpkg-" not in err  # not the temporary file's name
    assert err == f"dnnc: error: cannot write '{out}': No such file or directory\n"


def test_inspect_of_a_truncated_package_names_it(tmp_path, capsys):
    src = _graph_file(tmp_path)
    whole = tmp_path / "g.dnnpkg"
    assert cli.main(["compile", src, "--arch", "sm_90a", "-o", str(whole)]) == 0
    cut = tmp_path / "cut.dnnpkg"
    cut.write_bytes(whole.read_bytes()[:200])
    capsys.readouterr()
    assert cli.main(["inspect", str(cut)]) == 1
    assert capsys.readouterr().err.startswith(f"dnnc: error: {cut}: not a readable dnnpkg")


def test_run_gives_a_verdict(tmp_path, capsys):
    assert cli.main(["run", _graph_file(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "PASS: 1 output within tolerance of the reference"
    assert lines[-2].endswith("  ok")


def test_run_fails_when_the_cpu_disagrees(tmp_path, capsys, monkeypatch):
    # No room at all for f32 rounding: exp's last bits differ from float64's.
    monkeypatch.setitem(cli.RUN_RTOL, "f32", 0.0)
    assert cli.main(["run", _graph_file(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("FAIL: 1 of 1 outputs differ from the reference")
    assert lines[-2].endswith("  MISMATCH")


@pytest.mark.parametrize("main, prog", [(cli.main, "dnnc"), (opt.main, "dnnc-opt")])
def test_version(main, prog, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{prog} {__version__} (MLIR ")


_NO_DNN = '''func.func @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %arg0, %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
'''

_RETURNS_ITS_INPUT = '''func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32>
    attributes {dnn.graph} {
  return %arg0 : tensor<4xf32>
}
'''


@pytest.mark.parametrize("text, message", [
    (_NO_DNN, "dnnc: error: graph function '@f': expected dnn ops only, got 'arith.addf' at "
              "{path}:2:8\n"),
    (_RETURNS_ITS_INPUT, "dnnc: error: graph function '@main' output #0: expected the result of "
                         "a dnn op, got an input of the function\n"),
])
@pytest.mark.parametrize("command", [[], ["--arch", "sm_90a"], "run"])
def test_a_module_without_a_dnn_graph_is_an_error(tmp_path, capsys, text, message, command):
    """It used to compile to '0 kernels:' and exit 0."""
    path = tmp_path / "f.mlir"
    path.write_text(text)
    argv = ["run", str(path)] if command == "run" else ["compile", str(path), *command]
    assert cli.main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err == message.format(path=path)
    assert "kernel" not in captured.out


def test_from_mlir_reads_a_graph_by_the_same_rule():
    with pytest.raises(dnnc.GraphError, match="graph function '@f': expected dnn ops only"):
        dnnc.Graph.from_mlir(_NO_DNN)


def test_run_draws_each_input_in_its_own_type(tmp_path, capsys):
    # The CPU back end takes int32 and boolean inputs only as int32 and bool.
    g = dnnc.Graph(name="g", io_data_type="f32")
    n = g.tensor(name="n", dim=[8], data_type="int32")
    keep = g.tensor(name="keep", dim=[8], data_type="bool")
    x = g.tensor(name="x", dim=[8])
    g.select(keep, g.cast(n, "f32"), x).set_output(True)
    path = tmp_path / "g.mlir"
    path.write_text(g.to_mlir())
    assert cli.main(["run", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("PASS")


def test_compile_and_run_name_an_input_they_cannot_read(tmp_path, capsys):
    missing = str(tmp_path / "nope.mlir")
    for argv in (["compile", missing], ["compile", missing, "--arch", "sm_90a"], ["run", missing]):
        assert cli.main(argv) == 1
        assert capsys.readouterr().err == (f"dnnc: error: cannot read '{missing}': No such file "
                                           "or directory\n")
    assert cli.main(["inspect", str(tmp_path / "nope.dnnpkg")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dnnc: error: ") and "nope.dnnpkg" in err and "[Errno" not in err


def test_compile_names_an_ir_output_it_cannot_write(tmp_path, capsys):
    out = str(tmp_path / "no" / "such" / "g.mlir")
    assert cli.main(["compile", _graph_file(tmp_path), "-o", out]) == 1
    assert capsys.readouterr().err == (f"dnnc: error: cannot write '{out}': No such file or "
                                       "directory\n")


def test_parse_errors_name_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "garbage.mlir"
    path.write_text("func.func @main() {\n  garbage\n}\n")
    assert cli.main(["compile", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dnnc: error: cannot parse the MLIR input\n")
    assert f"{path}:2:3: error: " in err and 'loc("-"' not in err


def test_opt_verifies_the_dnn_ops_a_pipeline_leaves(tmp_path, capsys, monkeypatch):
    """A pass that leaves a dnn op whose shapes contradict each other fails
    dnnc-opt, as mlir-opt's verifier fails a pass that breaks structure."""
    from dnnc import passes
    from mlir import ir

    def break_softmax(module, pipeline, dump_dir=None):
        for op in passes.dnn_ops(module):
            if op.name == "dnn.softmax":
                with module.context:
                    op.attributes["axis"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 7)

    src = _graph_file(tmp_path)
    assert opt.main([src, "--pass-pipeline", "builtin.module(canonicalize)"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(passes, "run_pipeline", break_softmax)
    assert opt.main([src, "--pass-pipeline", "builtin.module(canonicalize)"]) == 1
    err = capsys.readouterr().err
    assert "dnn.softmax" in err and "error:" in err

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

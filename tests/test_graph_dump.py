"""gpu_driver.graph_dump and ``gpu-driver dump``: the Graphviz text of a model, with the fused groups
and the memory plan of an accelerator device."""
import re
from pathlib import Path

import pytest

from gpu_driver import ModelBuilder, cli, graph_dump, zoo
from gpu_driver.errors import DriverError
from gpu_driver.graph_dump import to_dot
from gpu_driver.hal.types import OperandType as T, OperationType as O

SHARED_MODELS = sorted(Path("/work/shared/models").glob("*.tflite"))


def _quant_add_relu():
    """x + c (QUANT8_ASYMM, scale 0.5, zero point 128) then RELU: an activation the compiler fuses."""
    b = ModelBuilder()
    x = b.add_input(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 0.5, 128)                 # 0
    c = b.add_constant(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], [1, 2, 3, 4], 0.5, 128)  # 1
    s = b.add_operand(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 0.5, 128)               # 2
    b.add_operation(O.ADD, [x, c, b.add_scalar(T.INT32, 0)], [s])                 # scalar: 3
    r = b.add_operand(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 0.5, 128)               # 4
    b.add_operation(O.RELU, [s], [r])
    b.set_outputs([r])
    return b.finish()


def _float_fork():
    """t = x + y read by a RELU and a RELU6 (two consumers: no chain, t lives in the arena)."""
    b = ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [2, 2])
    y = b.add_input(T.TENSOR_FLOAT32, [2, 2])
    t = b.add_operand(T.TENSOR_FLOAT32, [2, 2])
    b.add_operation(O.ADD, [x, y, b.add_scalar(T.INT32, 0)], [t])
    o1 = b.add_operand(T.TENSOR_FLOAT32, [2, 2])
    b.add_operation(O.RELU, [t], [o1])
    o2 = b.add_operand(T.TENSOR_FLOAT32, [2, 2])
    b.add_operation(O.RELU6, [t], [o2])
    b.set_outputs([o1, o2])
    return b.finish()


def _labels(dot: str) -> dict[str, str]:
    """node id -> label text (\\n as a real newline)."""
    return {m[1]: m[2].replace("\\n", "\n") for m in re.finditer(r'^\s*(\w+) \[.*?label="(.*?)"\];$', dot, re.M)}


def test_builder_model_names_every_operand_and_operation():
    dot = to_dot(_quant_add_relu())
    assert dot.startswith("digraph model {") and dot.rstrip().endswith("}")
    labels = _labels(dot)
    assert labels["t0"] == "#0 TENSOR_QUANT8_ASYMM [1,2,2,1]\nscale=0.5 zero_point=128\ninput"
    assert labels["t1"] == "#1 TENSOR_QUANT8_ASYMM [1,2,2,1]\nscale=0.5 zero_point=128\nconstant"
    assert labels["t2"] == "#2 TENSOR_QUANT8_ASYMM [1,2,2,1]\nscale=0.5 zero_point=128\ntemporary"
    assert labels["t3"] == "#3 INT32 = 0\nconstant"
    assert labels["t4"] == "#4 TENSOR_QUANT8_ASYMM [1,2,2,1]\nscale=0.5 zero_point=128\noutput"
    assert labels["op0"] == "op #0 ADD" and labels["op1"] == "op #1 RELU"
    edges = set(re.findall(r"^\s*(\w+ -> \w+)", dot, re.M))
    assert edges == {"t0 -> op0", "t1 -> op0", "t3 -> op0", "op0 -> t2", "t2 -> op1", "op1 -> t4"}
    assert "cluster" not in dot and "memory plan" not in dot  # no device: the model alone


def test_zoo_model_by_name():
    bench = zoo.mobilenet_v1(0.25, 96)
    dot = to_dot("mobilenet_v1:0.25:96")
    assert dot == to_dot(bench.model)
    labels = _labels(dot)
    ops = bench.model.main.operations
    assert len(ops) == 31 and all(f"op{k}" in labels for k in range(len(ops)))
    assert all(f"t{i}" in labels for i in range(len(bench.model.main.operands)))
    assert labels["t0"] == "#0 TENSOR_FLOAT32 [1,96,96,3]\ninput"
    assert labels["t1"] == "#1 TENSOR_FLOAT32 [8,3,3,3]\nconstant"   # 32 × 0.25 filters of 3×3×3
    assert labels["t2"] == "#2 TENSOR_FLOAT32 [1,48,48,8]\ntemporary"  # stride 2, SAME
    assert labels["t3"] == "#3 TENSOR_FLOAT32 [8]\nconstant"
    assert labels["t6"] == "#6 INT32 = 3\nconstant"                    # RELU6
    assert labels["op0"] == "op #0 CONV_2D" and labels["op1"] == "op #1 DEPTHWISE_CONV_2D"
    assert labels["op28"] == "op #28 RESHAPE" and labels["op30"] == "op #30 SOFTMAX"
    out = bench.model.main.output_indexes[0]
    assert labels[f"t{out}"] == f"#{out} TENSOR_FLOAT32 [1,1001]\noutput"


def test_reference_device_has_no_groups():
    dot = to_dot(_quant_add_relu(), device="reference")
    assert "device reference" in dot and "no fused groups" in dot and "cluster" not in dot


def test_fused_elementwise_chain_on_the_accelerator(accelerator):
    dot = to_dot(zoo.chain_model(2, shape=(1, 4), relu=True), accelerator)
    labels = _labels(dot)
    assert f"device {accelerator.name}" in dot
    assert "subgraph cluster_fused_0 {" in dot and "cluster_fused_1" not in dot
    assert "fused group 0: element-wise chain (ADD → RELU → ADD → RELU)" in dot
    cluster = dot[dot.index("subgraph cluster_fused_0"):]
    cluster = cluster[:cluster.index("\n  }")]
    assert all(f"op{k} [" in cluster for k in range(4))
    for i in (3, 4, 6):  # the chain's intermediates never reach memory
        assert labels[f"t{i}"] == f"#{i} TENSOR_FLOAT32 [1,4]\ntemporary\ninside the fused kernel (no storage)"
    assert labels["t0"] == "#0 TENSOR_FLOAT32 [1,4]\ninput\ninput buffer, 16 B"
    assert labels["t7"] == "#7 TENSOR_FLOAT32 [1,4]\noutput\noutput buffer, 16 B"


def test_fused_activation_on_the_accelerator(accelerator):
    dot = to_dot(_quant_add_relu(), accelerator.name)
    labels = _labels(dot)
    assert "fused group 0: fused activation (ADD → RELU)" in dot
    assert labels["t2"].endswith("temporary\ninside the fused kernel (no storage)")
    assert labels["t1"].endswith("constant\nconstant block offset 0, 4 B")


def test_memory_plan_on_the_accelerator(accelerator):
    dot = to_dot(_float_fork(), accelerator)
    labels = _labels(dot)
    assert "cluster" not in dot  # two consumers of t: nothing fuses
    assert labels["t2"] == "#2 TENSOR_FLOAT32 [2,2]\ntemporary\narena offset 0, 16 B"
    assert labels["op0"].startswith("op #0 ADD\nkernel ")
    plan = re.search(r'memory_plan \[shape=note, label="(.*)"\];', dot)[1]
    assert plan.startswith("memory plan: arena 256 B (256 B without reuse), constants 0 B\\l")
    assert "offset 0: o2 (operand #2), 16 B\\l" in plan


def test_zoo_model_on_the_accelerator(accelerator):
    labels = _labels(to_dot("mobilenet_v1:0.25:96", accelerator))
    assert labels["op28"] == "op #28 RESHAPE\nno kernel (aliases its input)"
    assert labels["t2"].startswith("#2 TENSOR_FLOAT32 [1,48,48,8]\ntemporary\narena offset ")
    assert labels["op0"].startswith("op #0 CONV_2D\nkernel ")


def test_cli_writes_the_dot_and_notes_a_missing_renderer(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(graph_dump, "render_svg", lambda dot, svg: None)
    dot, svg = tmp_path / "m.dot", tmp_path / "m.svg"
    assert cli.main(["dump", "mobilenet_v1:0.25:96", "--dot", str(dot), "--svg", str(svg)]) == 0
    assert dot.read_text() == to_dot("mobilenet_v1:0.25:96")
    out = capsys.readouterr().out
    assert f"graph written to {dot}" in out and "only" in out and "was written" in out
    assert not svg.exists()


def test_cli_with_a_device(tmp_path, capsys, accelerator):
    dot = tmp_path / "chain.dot"
    assert cli.main(["dump", "mobilenet_v2:0.25:96", "--dot", str(dot), "--device", accelerator.name]) == 0
    assert "memory_plan [" in dot.read_text()


def test_cli_renders_svg_when_graphviz_is_installed(tmp_path):
    if graph_dump.shutil.which("dot") is None:
        pytest.importorskip("graphviz")
    dot, svg = tmp_path / "m.dot", tmp_path / "m.svg"
    assert cli.main(["dump", "mobilenet_v1:0.25:96", "--dot", str(dot), "--svg", str(svg)]) == 0
    assert "<svg" in svg.read_text()


@pytest.mark.parametrize("model, message", [("no_such_model", "neither a .tflite file nor a zoo model"),
                                            ("/no/such/file.tflite", "cannot read TF Lite model"),
                                            ("mobilenet_v1:wide", "expected NAME[:WIDTH[:RESOLUTION]]")])
def test_a_bad_model_is_a_clear_error(tmp_path, capsys, model, message):
    with pytest.raises(DriverError, match=re.escape(message)):
        graph_dump.resolve_model(model)
    assert cli.main(["dump", model, "--dot", str(tmp_path / "x.dot")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpu-driver: error: INVALID_ARGUMENT") and message in err and "Traceback" not in err
    assert not (tmp_path / "x.dot").exists()


def test_a_bad_path_or_device_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["dump", "mobilenet_v1:0.25:96", "--dot", str(tmp_path / "no" / "x.dot")]) == 1
    assert "gpu-driver: error: FileNotFoundError" in capsys.readouterr().err
    assert cli.main(["dump", "mobilenet_v1:0.25:96", "--dot", str(tmp_path / "x.dot"), "--device", "tpu:9"]) == 2
    assert "gpu-driver: error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # --dot is required: argparse's usage error
        cli.main(["dump", "mobilenet_v1"])
    assert exc.value.code == 2 and "--dot" in capsys.readouterr().err


@pytest.mark.skipif(not SHARED_MODELS, reason="no /work/shared/models/*.tflite")
def test_a_shared_tflite_model(tmp_path):
    from gpu_driver import tflite, get_devices

    path = SHARED_MODELS[0]
    model = tflite.load_model(str(path)).model
    dot_file = tmp_path / "m.dot"
    accelerators = [d.name for d in get_devices() if d.name != "reference"]
    args = ["dump", str(path), "--dot", str(dot_file)] + (["--device", accelerators[0]] if accelerators else [])
    assert cli.main(args) == 0
    labels = _labels(dot_file.read_text())
    sg = model.main
    for k, op in enumerate(sg.operations):
        assert labels[f"op{k}"].startswith(f"op #{k} {op.type.name}")
    for i in sg.input_indexes:
        dims = ",".join(str(d) for d in sg.operands[i].dimensions)
        assert labels[f"t{i}"].startswith(f"#{i} {sg.operands[i].type.name} [{dims}]\n")
        assert "\ninput" in labels[f"t{i}"]

"""`gpu-driver run MODEL.tflite`: random integer inputs in a range the user states, and a hint when
the drawn integers are out of what the model takes (token ids past an embedding table)."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu_driver import cli

from .test_operators import counting_loop_model

MODEL = str(Path(__file__).resolve().parent / "keras_models" / "transformer_float.tflite")


def test_int_range_draws_token_ids_the_embedding_takes(capsys):
    assert cli.main(["run", MODEL, "--device", "reference", "--int-range", "0,99"]) == 0
    out = capsys.readouterr().out
    assert "shape [1, 3] float32" in out
    low = float(out.split("min ")[1].split(",")[0])
    assert low > 0  # a softmax: every probability positive (the minimum is reported, not capped at 0)


def test_out_of_range_integers_get_a_hint(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", MODEL, "--device", "reference", "--int-range", "100,200"])
    message = str(exit_.value)
    assert "GATHER" in message and "--int-range" in message and "[100, 200]" in message


@pytest.mark.parametrize("text", ["5,1", "a,b", "3"])
def test_bad_int_range_is_a_usage_error(text, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", MODEL, "--int-range", text])
    assert exit_.value.code == 2
    assert "--int-range" in capsys.readouterr().err


def test_bench_takes_the_int_range_too(capsys):
    assert cli.main(["bench", MODEL, "--device", "reference", "--runs", "3", "--int-range", "0,99"]) == 0
    out = capsys.readouterr().out
    assert "transformer_float.tflite" in out and "error" not in out.lower()


def test_bench_of_a_model_the_cache_does_not_keep(capsys, tmp_path):
    # an interpreted WHILE loop: the accelerator prepares it but keeps no compilation-cache copy;
    # the table says so ("–") instead of failing the model
    path = tmp_path / "counting_loop.tflite"
    path.write_bytes(counting_loop_model())   # its trip count comes from an input
    assert cli.main(["bench", str(path), "--device", "opencl:0", "--runs", "3", "--int-range", "0,4"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("counting_loop.tflite"))
    assert "error" not in row.lower() and row.split()[3] == "–"


def test_bench_hints_at_the_int_range_when_random_token_ids_fail(capsys):
    assert cli.main(["bench", MODEL, "--device", "reference", "--runs", "3", "--int-range", "100,200"]) == 1
    row = next(line for line in capsys.readouterr().out.splitlines() if "transformer_float.tflite" in line)
    assert "GATHER" in row and "drawn from [100, 200]: give --int-range LOW,HIGH" in row

"""Calibration: measured on the CPU with small sizes, cached by device name, reused unless forced."""

from __future__ import annotations

import argparse
import json

import pytest

from harness.commands import calibrate_command
from harness.sol import calibration

torch = pytest.importorskip("torch")
SMALL = {"copy_bytes": 1 << 20, "matmul_n": 64, "repeats": 2}


def test_measure_cpu():
    record = calibration.measure("cpu", **SMALL)
    assert record["device_name"] == "cpu"
    assert record["copy_bytes_per_s"] > 0
    assert set(record["matmul_flops_per_s"]) == {"fp32"} and record["matmul_flops_per_s"]["fp32"] > 0
    assert record["copy_bytes"] == SMALL["copy_bytes"] and record["matmul_n"] == 64


def test_measure_rejects_other_devices():
    with pytest.raises(ValueError):
        calibration.measure("tpu")


def test_cache_written_then_reused_then_forced(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "calibration.json"
    first, reused = calibration.calibrate("cpu", cache_path=path, **SMALL)
    assert not reused and path.is_file()
    assert json.loads(path.read_text())["devices"]["cpu"] == first

    def must_not_measure(*args, **kwargs):
        raise AssertionError("a cached device was measured again")

    monkeypatch.setattr(calibration, "measure", must_not_measure)
    again, reused = calibration.calibrate("cpu", cache_path=path)
    assert reused and again == first
    assert calibration.load_calibration("cpu", path) == first

    monkeypatch.setattr(calibration, "measure", lambda device, **sizes: {**first, "measured_at": "forced"})
    forced, reused = calibration.calibrate("cpu", cache_path=path, force=True)
    assert not reused and forced["measured_at"] == "forced"
    assert calibration.load_calibration("cpu", path)["measured_at"] == "forced"


def test_cache_keeps_other_devices(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"format": 1, "devices": {"NVIDIA H100 80GB HBM3": {"copy_bytes_per_s": 3e12}}}))
    calibration.calibrate("cpu", cache_path=path, **SMALL)
    devices = json.loads(path.read_text())["devices"]
    assert set(devices) == {"NVIDIA H100 80GB HBM3", "cpu"}


def test_load_calibration_missing_or_corrupt(tmp_path):
    assert calibration.load_calibration("cpu", tmp_path / "absent.json") is None
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    assert calibration.load_calibration("cpu", corrupt) is None
    assert calibration.load_calibration("NVIDIA B200", corrupt) is None


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    calibrate_command.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_cli_cuda_without_gpu_exits_110(tmp_path, capsys):
    path = tmp_path / "calibration.json"
    assert _run(["calibrate", "--device", "cuda", "--cache", str(path)]) == 110
    captured = capsys.readouterr()
    assert len(captured.err.strip().splitlines()) == 1 and "no CUDA GPU" in captured.err
    assert not path.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU default")
def test_cli_defaults_to_cpu_with_a_note(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(calibration, "CPU_COPY_BYTES", SMALL["copy_bytes"])
    monkeypatch.setattr(calibration, "CPU_MATMUL_N", SMALL["matmul_n"])
    monkeypatch.setattr(calibration, "CPU_REPEATS", SMALL["repeats"])
    path = tmp_path / "calibration.json"
    assert _run(["calibrate", "--cache", str(path)]) == 0
    captured = capsys.readouterr()
    assert "calibrating the CPU" in captured.err
    assert "calibration of cpu (measured" in captured.out and "fp32 matmul" in captured.out
    assert _run(["calibrate", "--cache", str(path)]) == 0
    assert "calibration of cpu (cached" in capsys.readouterr().out


@pytest.mark.parametrize(("reused", "stored", "measured"), [(False, True, True), (True, False, True),
                                                            (True, True, False)])
def test_a_gpu_calibration_measures_the_harness_against_graph_replay_unless_it_has(tmp_path, monkeypatch, capsys,
                                                                                   reused, stored, measured):
    record = {"device_name": "NVIDIA H100 80GB HBM3", "measured_at": "now", "method": "stand-in"}
    if stored:
        record["fidelity"] = {"points": [], "split_us": 10.0, "method": "stand-in", "abs_us": 0.2, "rel": 0.03}
    asked = []
    monkeypatch.setattr(calibrate_command, "calibrate", lambda device, force, cache_path: (dict(record), reused))
    monkeypatch.setattr(calibrate_command, "measure_fidelity", lambda name, path: asked.append(name) or record)
    monkeypatch.setattr(calibrate_command, "render", lambda record, reused, path: "rendered")
    assert _run(["calibrate", "--device", "cuda", "--cache", str(tmp_path / "c.json")]) == 0
    assert asked == (["NVIDIA H100 80GB HBM3"] if measured else [])

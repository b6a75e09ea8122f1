"""``benchmark`` (host time and simulated device time, from the system trace), ``trace`` (the
Perfetto timeline, nrt_profile_start/stop) and ``conform`` (the descriptor-stream trace of the
shipped ``nrt-emu conform``, against the committed snapshots of the conformance suite)."""

import json

import numpy as np
import pytest

import nrt_emu
from support import FIXTURES, neff

SP_CLOCK_HZ = {"trn1": 1.4e9, "trn2": 1.2e9}
SNAPSHOTS = FIXTURES.parent / "conformance" / "tests" / "snapshots"


def test_benchmark_reports_host_and_device_time(nrt_device):
    with nrt_device.load(neff(f"mlp2.{nrt_device.target}")) as model:
        b = model.benchmark(5)
        x = {s.name: np.full(s.shape, 0.5, s.dtype) for s in model.inputs}
        b2 = model.benchmark(3, **x)
    assert b.iterations == 5 and len(b.host_ns) == 5 and all(t > 0 for t in b.host_ns)
    assert len(b.device_ns) == 5 and len(b.device_cycles) == 5
    # The simulated time of an execution is a function of the model alone: the first execution
    # after the load also configures the sequencer and the ACT/DVE tables, later ones skip that.
    first, *rest = b.device_ns
    assert len(set(rest)) == 1 and first > rest[0] and set(b2.device_ns) == {rest[0]}
    for ns, cycles in zip(b.device_ns, b.device_cycles):
        assert ns == pytest.approx(max(cycles) * 1e9 / SP_CLOCK_HZ[nrt_device.target])
    assert b.device_median_ns == rest[0] and b.host_median_ns > 0
    assert "executions" in str(b)


def test_benchmark_refuses_a_bad_count_and_bad_inputs(nrt_devices):
    with nrt_devices.get("trn2", "sim").load(neff("add.trn2")) as model:
        with pytest.raises(ValueError):
            model.benchmark(0)
        with pytest.raises(nrt_emu.InputError, match="missing input 'b'"):
            model.benchmark(2, a=np.zeros((128, 512), np.float32))


@pytest.mark.parametrize("nrt_device", ["trn1-sim", "trn2-sim"], indirect=True)
def test_trace_writes_the_device_timeline(nrt_device, tmp_path):
    path = tmp_path / "timeline.json"
    with nrt_device.load(neff(f"matmul_bias_relu.{nrt_device.target}")) as model:
        out = model.trace(path)
    assert set(out) == {s.name for s in model.outputs}
    doc = json.loads(path.read_text())
    assert doc["otherData"]["target"] == nrt_device.target
    events = doc["traceEvents"]
    tracks = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert "sequencer" in tracks and any("PE" in t or "pe" in t for t in tracks), tracks
    spans = [e for e in events if e.get("ph") == "X"]
    assert spans and all(e["dur"] >= 0 for e in spans)


@pytest.mark.parametrize("nrt_device", ["trn1-shim"], indirect=True)
def test_the_driver_backend_has_no_timeline(nrt_device, tmp_path):
    with nrt_device.load(neff("add.trn1")) as model:
        with pytest.raises(nrt_emu.NrtError) as e:
            model.trace(tmp_path / "t.json")
    assert (e.value.function, e.value.status) == ("nrt_profile_start", "NRT_INVALID")
    assert "driver backend" in e.value.message


def committed_trace(model_id: str) -> str:
    """The conformance document of ``model_id`` as the committed insta snapshots hold it."""
    doc = ""
    for phase in ("load", "exec1", "exec2"):
        text = (SNAPSHOTS / f"{model_id}.{phase}.snap").read_text()
        body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
        doc += f"## {phase}\n" + body + ("" if body.endswith("\n") else "\n")
    return doc


@pytest.mark.parametrize("backend", ["sim", "shim"])
def test_conform_matches_the_committed_snapshots(backend, nrt_devices, tmp_path):
    snapshot = tmp_path / "add.trn1.trace"
    snapshot.write_text(committed_trace("add.trn1"))
    with nrt_devices.get("trn1", backend).load(neff("add.trn1").read_bytes()) as model:
        result = model.conform(snapshot)
        assert result.ok and result.outcome == "matches" and "matches" in result.report, result.report

        changed = tmp_path / "changed.trace"
        lines = snapshot.read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if "tail_inc" in line or "desc" in line)
        lines[at] = lines[at].rstrip("\n") + " changed\n"
        changed.write_text("".join(lines))
        differs = model.conform(changed)
        assert not differs and differs.outcome == "differs" and "differs" in differs.report

        written = tmp_path / "new" / "add.trn1.trace"
        assert model.conform(written, update=True).outcome == "updated"
    assert written.read_text() == snapshot.read_text()

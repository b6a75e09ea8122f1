"""A device test suite gated the way torch-neuronx's conftest gates its device tests: the device
tests run only when /dev/neuron0 exists and `neuron-ls -j` lists a device, and are skipped
otherwise. Standard library only (unittest; pytest collects it as well).

Under nrt-emu's device shim (LD_PRELOAD=libnrt_emu_shim.so) with `nrt-emu install --tools` on
PATH and NRT_EMU_BACKEND=driver, the device tests run against the emulated device through the
same paths a device host offers: the /dev listing, neuron-ls, the driver's sysfs tree (read by a
shell script while this process loads and runs a model through libnrt), the runtime version.

Environment: NRT_EMU_TEST_NEFF, a NEFF for the emulated generation with a matmul (so it
counts flops)."""
import ctypes
import glob
import json
import os
import shutil
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOT = os.path.join(HERE, "sysfs_snapshot.sh")


def neuron_ls_devices():
    """The devices `neuron-ls -j` lists, or None when there is no neuron-ls or it fails."""
    exe = shutil.which("neuron-ls")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-j"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        devices = json.loads(out.stdout)
    except ValueError:
        return None
    return devices if isinstance(devices, list) else None


def neuron_device_available():
    """The gate: a device node and a neuron-ls that lists a device."""
    if not os.path.exists("/dev/neuron0"):
        return False
    devices = neuron_ls_devices()
    return bool(devices)


DEVICE = neuron_device_available()
REASON = "no Neuron device: /dev/neuron0 missing or neuron-ls -j lists none"


class GateTest(unittest.TestCase):
    """Runs everywhere: the gate answers consistently with what the host shows."""

    def test_gate_needs_the_device_node(self):
        if not os.path.exists("/dev/neuron0"):
            self.assertFalse(DEVICE)
        else:
            self.assertEqual(DEVICE, bool(neuron_ls_devices()))


def snapshot():
    """{(core, name): value} from the shell script reading sysfs."""
    out = subprocess.run(["sh", SNAPSHOT], capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        core, name, value = line.split()
        values[(core, name)] = int(value)
    return values


def total(values, name):
    return sum(v for (_, n), v in values.items() if n == name)


@unittest.skipUnless(DEVICE, REASON)
class DeviceListingTests(unittest.TestCase):
    def test_dev_lists_the_device_nodes(self):
        names = sorted(n for n in os.listdir("/dev") if n.startswith("neuron"))
        self.assertIn("neuron0", names)
        self.assertEqual(sorted(glob.glob("/dev/neuron*")), ["/dev/" + n for n in names])
        self.assertEqual(sorted(e.name for e in os.scandir("/dev") if e.name.startswith("neuron")), names)
        shell = subprocess.run(["sh", "-c", "ls /dev/neuron*"], capture_output=True, text=True, check=True)
        self.assertEqual(shell.stdout.split(), ["/dev/" + n for n in names])
        self.assertEqual(len(names), len(neuron_ls_devices()))

    def test_neuron_ls_json_has_the_documented_fields(self):
        for i, d in enumerate(neuron_ls_devices()):
            self.assertEqual(d["neuron_device"], i)
            for key, kind in [("bdf", str), ("cpu_affinity", str), ("numa_node", str), ("nc_count", int),
                              ("memory_size", int), ("neuroncore_ids", list), ("neuron_processes", list)]:
                self.assertIsInstance(d[key], kind, key)
            self.assertEqual(len(d["neuroncore_ids"]), d["nc_count"])
            self.assertTrue(d["connected_to"] is None or isinstance(d["connected_to"], list))

    def test_sysfs_describes_the_device(self):
        base = "/sys/devices/virtual/neuron_device/neuron0"
        with open(base + "/core_count") as f:
            cores = int(f.read())
        with open(base + "/info/architecture/device_name") as f:
            name = f.read().strip()
        self.assertIn(name, ("Trainium1", "Trainium2"))
        self.assertEqual(cores, 2 if name == "Trainium1" else 8)
        self.assertEqual(os.path.realpath("/sys/class/neuron_device/neuron0"), base)
        self.assertEqual(sorted(n for n in os.listdir(base) if n.startswith("neuron_core")),
                         sorted("neuron_core%d" % i for i in range(cores)))
        with open("/sys/module/neuron/version") as f:
            self.assertRegex(f.read(), r"^\d+\.\d+\.\d+\.\d+\n$")
        with open(base + "/info/runtime_version") as f:
            self.assertRegex(f.read(), r"^2\.\d+\.\d+\.\d+\n$")


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("usage", ctypes.c_uint32), ("size", ctypes.c_size_t),
                ("dtype", ctypes.c_uint32), ("shape", ctypes.POINTER(ctypes.c_uint32)), ("ndim", ctypes.c_uint32)]


class Version(ctypes.Structure):
    _fields_ = [("rt_major", ctypes.c_uint64), ("rt_minor", ctypes.c_uint64), ("rt_patch", ctypes.c_uint64),
                ("rt_maintenance", ctypes.c_uint64), ("rt_detail", ctypes.c_char * 128),
                ("git_hash", ctypes.c_char * 64)]


@unittest.skipUnless(DEVICE, REASON)
class DeviceRuntimeTests(unittest.TestCase):
    def test_runtime_version_is_2x(self):
        lib = ctypes.CDLL("libnrt.so.1")
        v = Version()
        self.assertEqual(lib.nrt_get_version(ctypes.byref(v), ctypes.c_size_t(ctypes.sizeof(v))), 0)
        self.assertGreaterEqual((v.rt_major, v.rt_minor), (2, 0))

    def run_model(self, lib, neff, runs, check_loaded):
        """Loads the model, executes it `runs` times on zero inputs, unloads it; calls
        `check_loaded(snapshot)` while it is loaded. Returns the snapshot after the executions."""
        vp = ctypes.c_void_p
        model = vp()
        self.assertEqual(lib.nrt_load(neff, ctypes.c_size_t(len(neff)), -1, -1, ctypes.byref(model)), 0)
        check_loaded(snapshot())
        info = vp()
        self.assertEqual(lib.nrt_get_model_tensor_info(model, ctypes.byref(info)), 0)
        count = ctypes.c_uint64.from_address(info.value).value
        entries = (TensorInfo * count).from_address(info.value + 8)
        ins, outs = vp(), vp()
        self.assertEqual(lib.nrt_allocate_tensor_set(ctypes.byref(ins)), 0)
        self.assertEqual(lib.nrt_allocate_tensor_set(ctypes.byref(outs)), 0)
        tensors = []
        for e in entries:
            t = vp()
            self.assertEqual(lib.nrt_tensor_allocate(0, 0, ctypes.c_size_t(e.size), e.name, ctypes.byref(t)), 0)
            tensors.append(t)
            if e.usage == 0:
                data = bytes(e.size)
                self.assertEqual(lib.nrt_tensor_write(t, data, ctypes.c_size_t(0), ctypes.c_size_t(e.size)), 0)
                self.assertEqual(lib.nrt_add_tensor_to_tensor_set(ins, e.name, t), 0)
            else:
                self.assertEqual(lib.nrt_add_tensor_to_tensor_set(outs, e.name, t), 0)
        for _ in range(runs):
            self.assertEqual(lib.nrt_execute(model, ins, outs), 0)
        executed = snapshot()
        for t in tensors:
            lib.nrt_tensor_free(ctypes.byref(t))
        lib.nrt_destroy_tensor_set(ctypes.byref(ins))
        lib.nrt_destroy_tensor_set(ctypes.byref(outs))
        lib.nrt_free_model_tensor_info(info)
        self.assertEqual(lib.nrt_unload(model), 0)
        return executed

    def test_sysfs_follows_a_model_as_it_loads_executes_and_unloads(self):
        lib = ctypes.CDLL("libnrt.so.1")
        for f in ("nrt_execute", "nrt_unload", "nrt_tensor_write", "nrt_add_tensor_to_tensor_set",
                  "nrt_tensor_free"):
            getattr(lib, f).argtypes = None
        with open(os.environ["NRT_EMU_TEST_NEFF"], "rb") as f:
            neff = f.read()
        before = snapshot()
        self.assertEqual(lib.nrt_init(1, b"", b""), 0)
        try:
            # A first model settles what the runtime itself keeps between models (the
            # execution's request slots): the baseline.
            self.run_model(lib, neff, 1, lambda s: None)
            baseline = snapshot()

            def loaded(s):
                self.assertGreater(total(s, "device_mem"), total(baseline, "device_mem"))
                self.assertGreater(total(s, "model_code"), total(baseline, "model_code"))
                # This process holds the device: neuron-ls lists it, with its runtime version.
                procs = neuron_ls_devices()[0]["neuron_processes"]
                mine = [p for p in procs if p["pid"] == os.getpid()]
                self.assertEqual(len(mine), 1, procs)
                self.assertRegex(mine[0]["neuron_runtime_version"], r"^2\.\d+\.\d+$")

            runs = 3
            executed = self.run_model(lib, neff, runs, loaded)
            self.assertEqual(total(executed, "inference_count"), total(baseline, "inference_count") + runs)
            self.assertEqual(total(executed, "success"), total(baseline, "success") + runs)
            self.assertGreater(total(executed, "flop_count"), total(baseline, "flop_count"))
            unloaded = snapshot()
            # Memory is back at the baseline on every core; the execution counters stay.
            for core in {c for c, _ in unloaded}:
                for name in ("device_mem", "model_code"):
                    self.assertEqual(unloaded[(core, name)], baseline[(core, name)], (core, name))
            self.assertEqual(total(unloaded, "inference_count"), total(executed, "inference_count"))
        finally:
            lib.nrt_close()
        closed = snapshot()
        self.assertEqual(total(closed, "device_mem"), total(before, "device_mem"))


if __name__ == "__main__":
    unittest.main()

"""Programs of their own against the drop-in library through ``nrt_env``: a ctypes program that
opens ``libnrt.so.1`` by its SONAME (on the simulator and on the driver backend under the
shim), the repository's C example compiled against the wheel's headers and library, and
``ctypes.CDLL("libnrt.so.1")`` inside the test process."""

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nrt_emu
from support import FIXTURES, neff

PROGRAMS = Path(__file__).parent / "programs"


@pytest.mark.parametrize("under_shim", [False, True], ids=["sim", "shim"])
def test_a_ctypes_program_uses_the_drop_in_library(nrt_env, under_shim):
    env = nrt_env.under_shim() if under_shim else nrt_env
    assert env["LD_LIBRARY_PATH"].split(":")[0] == nrt_emu.libdir()
    target = env["NRT_EMU_TARGET"]
    p = subprocess.run(
        [sys.executable, str(PROGRAMS / "ctypes_infer.py"), str(neff(f"add.{target}"))],
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ctypes program ok" in p.stdout
    # The failing calls logged their lines, in libnrt's format, on the console.
    assert "ERROR   NRT:nrt_execute" in p.stderr and "ERROR   NRT:nrt_tensor_write" in p.stderr


def test_ctypes_by_soname_in_process_is_the_wheels_library(nrt_env):
    lib = ctypes.CDLL("libnrt.so.1")
    mine = ctypes.CDLL(nrt_emu.libnrt_path())
    addr = ctypes.cast(lib.nrt_get_status_as_str, ctypes.c_void_p).value
    assert addr == ctypes.cast(mine.nrt_get_status_as_str, ctypes.c_void_p).value
    lib.nrt_get_status_as_str.restype = ctypes.c_char_p
    assert lib.nrt_get_status_as_str(4) == b"NRT_RESOURCE"


def test_the_c_example_builds_against_the_wheel(nrt_env, tmp_path):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    example = FIXTURES.parent / "examples" / "libnrt_infer.c"
    exe = tmp_path / "infer"
    flags = subprocess.run(
        [sys.executable, "-m", "nrt_emu", "--cflags", "--libs"], capture_output=True, text=True, check=True
    ).stdout.split()
    build = subprocess.run([cc, str(example), *flags, "-pthread", "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    env = dict(nrt_env)
    env.pop("LD_LIBRARY_PATH")  # found through the rpath --libs gave
    run = subprocess.run(
        [str(exe), str(neff("mlp2.trn1"))], env={**env, "NRT_EMU_TARGET": "trn1"}, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr

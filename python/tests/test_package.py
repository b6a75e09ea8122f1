"""What the installed wheel holds and how it is tagged: the library (SONAME, every exported
function at NRT_2.0.0, ``libnrt.so`` the same file), the headers, the device shim, the
``nrt-emu`` command (``install`` lays a prefix out from the wheel), the pytest11 entry point,
``python -m nrt_emu`` — and that every shipped ELF file keeps to the manylinux tag the wheel
claims (glibc symbol versions and libraries)."""

import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import nrt_emu

LIB = Path(nrt_emu.libdir())
# Every header of the project's capi/include (the wheel ships them all; this suite runs from
# the source tree, python/tests/).
_INCLUDE = Path(__file__).resolve().parents[2] / "capi" / "include"
HEADERS = {str(p.relative_to(_INCLUDE)) for p in _INCLUDE.rglob("*.h")}
assert "nrt/nrt.h" in HEADERS, f"no headers found under {_INCLUDE}"
# The libraries manylinux policies let a wheel's ELF files link against.
MANYLINUX_LIBS = {
    "libc.so.6",
    "libm.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "ld-linux-x86-64.so.2",
    "libstdc++.so.6",
}


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"no {name} on PATH (binutils)")
    return path


def elf_files():
    return [LIB / "libnrt.so.1", LIB / "libnrt_emu_shim.so", Path(nrt_emu.cli_path())]


def test_the_library_headers_and_shim_are_installed():
    assert (LIB / "libnrt.so.1").read_bytes() == (LIB / "libnrt.so").read_bytes()
    found = {str(p.relative_to(nrt_emu.include_dir())) for p in Path(nrt_emu.include_dir()).rglob("*.h")}
    assert found == HEADERS
    assert Path(nrt_emu.shim_path()).is_file()
    dyn = subprocess.run([tool("readelf"), "-d", str(LIB / "libnrt.so.1")], capture_output=True, text=True).stdout
    assert "Library soname: [libnrt.so.1]" in dyn


def test_every_exported_function_is_at_nrt_2_0_0():
    out = subprocess.run(
        [tool("nm"), "-D", "--defined-only", str(LIB / "libnrt.so.1")], capture_output=True, text=True, check=True
    ).stdout
    symbols = [line.split()[-1] for line in out.splitlines() if " T " in line]
    assert len(symbols) > 100
    assert all(s.endswith("@@NRT_2.0.0") for s in symbols), [s for s in symbols if not s.endswith("@@NRT_2.0.0")]
    assert "nrt_init@@NRT_2.0.0" in symbols and "nrt_sys_trace_fetch_events@@NRT_2.0.0" in symbols


def test_the_shipped_files_keep_to_the_wheels_manylinux_tag():
    dist = metadata.distribution("nrt-emu")
    tags = [line.split(": ", 1)[1] for line in dist.read_text("WHEEL").splitlines() if line.startswith("Tag: ")]
    assert len(tags) == 1 and tags[0].startswith("py3-none-manylinux_"), tags
    major, minor = map(int, re.match(r"py3-none-manylinux_(\d+)_(\d+)_x86_64", tags[0]).groups())
    objdump, readelf = tool("objdump"), tool("readelf")
    for f in elf_files():
        syms = subprocess.run([objdump, "-T", str(f)], capture_output=True, text=True, check=True).stdout
        versions = {tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", syms)}
        assert versions and max(v[:2] for v in versions) <= (major, minor), (f, max(versions))
        needed = set(
            re.findall(
                r"\(NEEDED\).*\[(.*)\]", subprocess.run([readelf, "-d", str(f)], capture_output=True, text=True).stdout
            )
        )
        assert needed <= MANYLINUX_LIBS, (f, needed - MANYLINUX_LIBS)


def test_the_cli_is_installed_and_installs_a_prefix_from_the_wheel(tmp_path):
    cli = nrt_emu.cli_path()
    assert Path(cli).parent == Path(sys.executable).parent
    run = subprocess.run([cli, "install", "--prefix", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "lib" / "libnrt.so.1").read_bytes() == (LIB / "libnrt.so.1").read_bytes()
    assert (tmp_path / "lib" / "libnrt.so").resolve() == (tmp_path / "lib" / "libnrt.so.1").resolve()
    assert (tmp_path / "include" / "nrt" / "nrt.h").read_text() == (
        Path(nrt_emu.include_dir()) / "nrt" / "nrt.h"
    ).read_text()
    target = subprocess.run([cli, "target", "--target", "trn1"], capture_output=True, text=True)
    assert target.returncode == 0 and "trn1" in target.stdout


def test_the_pytest_plugin_and_python_m():
    eps = metadata.entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    assert any(ep.name == "nrt_emu" and ep.value == "nrt_emu.pytest_plugin" for ep in group)
    out = subprocess.run(
        [sys.executable, "-m", "nrt_emu", "--cflags", "--libs", "--shim"], capture_output=True, text=True, check=True
    ).stdout.split()
    lib = nrt_emu.libdir()
    assert out == [nrt_emu.shim_path(), f"-I{nrt_emu.include_dir()}", f"-L{lib}", f"-Wl,-rpath,{lib}", "-lnrt"]

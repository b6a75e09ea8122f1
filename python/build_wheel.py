#!/usr/bin/env python3
"""Builds the nrt-emu wheel: the drop-in library and the device shim with cargo, staged with the
headers into src/nrt_emu/ as package data, then ``maturin build`` (which compiles the
``nrt-emu`` command and packs everything).

    python3 python/build_wheel.py                 # release build, wheel in target/wheels/
    python3 python/build_wheel.py --profile dev   # from the debug build

Prints the wheel's path last. Needs cargo, and maturin importable by this Python
(``pip install maturin``); ``strip`` (binutils), when present, drops the libraries' debug
information from the staged copies.
"""

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGE = HERE / "src" / "nrt_emu"


def profile_dir(target_dir: Path, profile: str) -> Path:
    return target_dir / ("debug" if profile in ("dev", "test") else profile)


def stage_library(src: Path, dst: Path) -> None:
    """Copies a shared library, without its debug information when ``strip`` is installed."""
    if not src.is_file():
        sys.exit(f"build_wheel: {src} does not exist (build it with cargo first)")
    strip = shutil.which("strip")
    if strip:
        subprocess.run([strip, "--strip-debug", "-o", str(dst), str(src)], check=True)
    else:
        shutil.copyfile(src, dst)
    dst.chmod(0o755)


def stage(artifacts: Path) -> None:
    """src/nrt_emu/lib/ (libnrt.so.1, libnrt.so, libnrt_emu_shim.so) and include/ (the
    headers), replacing what an earlier build staged."""
    lib = PACKAGE / "lib"
    include = PACKAGE / "include"
    for d in (lib, include):
        shutil.rmtree(d, ignore_errors=True)
    lib.mkdir(parents=True)
    stage_library(artifacts / "libnrt.so", lib / "libnrt.so.1")
    # A wheel cannot hold a symlink: the link-time name is a second copy of the same file.
    shutil.copyfile(lib / "libnrt.so.1", lib / "libnrt.so")
    (lib / "libnrt.so").chmod(0o755)
    stage_library(artifacts / "libnrt_emu_shim.so", lib / "libnrt_emu_shim.so")
    shutil.copytree(ROOT / "capi" / "include", include)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="release", help="cargo profile (release, dev, ...)")
    p.add_argument("--out", default=None, help="where to write the wheel (default target/wheels)")
    p.add_argument(
        "--no-cargo",
        action="store_true",
        help="take libnrt.so and libnrt_emu_shim.so as already built in the profile directory",
    )
    a = p.parse_args()
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    out = Path(a.out) if a.out else target_dir / "wheels"
    cargo = os.environ.get("CARGO", "cargo")
    if not a.no_cargo:
        subprocess.run(
            [cargo, "build", "--profile", a.profile, "-p", "nrt-capi", "-p", "nrt-emu-shim"],
            cwd=ROOT,
            check=True,
        )
    stage(profile_dir(target_dir, a.profile))
    before = set(out.glob("nrt_emu-*.whl")) if out.is_dir() else set()
    for old in before:
        old.unlink()
    # A release wheel's command is stripped; other profiles build it exactly as cargo did (so a
    # build that cargo already made is reused as it is).
    strip = ["--strip"] if a.profile == "release" else []
    subprocess.run(
        [sys.executable, "-m", "maturin", "build", "--profile", a.profile, *strip, "--out", str(out)],
        cwd=HERE,
        check=True,
    )
    wheels = sorted(out.glob("nrt_emu-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"build_wheel: expected one wheel in {out}, found {[w.name for w in wheels]}")
    print(wheels[0])


if __name__ == "__main__":
    main()

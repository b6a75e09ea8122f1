#!/usr/bin/env python3
"""Builds the nrt-emu wheel from this checkout through its PEP 517 backend (``build_backend.py``,
the path ``pip wheel python/`` takes): cargo builds the drop-in library and the device shim,
they are staged with the headers into src/nrt_emu/ as package data, then maturin compiles the
``nrt-emu`` command and packs everything.

    python3 python/build_wheel.py                 # release build, wheel in target/wheels/
    python3 python/build_wheel.py --profile dev   # from the debug build

Prints the wheel's path last. Needs cargo, and maturin importable by this Python
(``pip install maturin``); ``strip`` (binutils), when present, drops the libraries' debug
information from the staged copies.
"""

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import build_backend  # noqa: E402  (after the path it lives on)


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
    out = Path(a.out).resolve() if a.out else build_backend.target_dir() / "wheels"
    settings = {
        "maturin.build-args": ["--profile", a.profile],
        "nrt-emu.cargo": "false" if a.no_cargo else "true",
    }
    # The backend runs where a PEP 517 frontend runs it: in the project directory. maturin
    # leaves its own copy in target/wheels: build into a directory of our own, then replace the
    # wheel in `out`.
    os.chdir(HERE)
    with tempfile.TemporaryDirectory() as tmp:
        name = build_backend.build_wheel(tmp, settings)
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("nrt_emu-*.whl"):
            old.unlink()
        wheel = out / name
        shutil.move(os.path.join(tmp, name), wheel)
    print(wheel)


if __name__ == "__main__":
    main()

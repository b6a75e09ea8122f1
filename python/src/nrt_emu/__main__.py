"""``python -m nrt_emu``: where the wheel's files are, for build systems and shells.

cc prog.c $(python -m nrt_emu --cflags --libs)
LD_PRELOAD=$(python -m nrt_emu --shim) ./uses-dev-neuron
"""

import argparse

from . import _paths


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m nrt_emu", description=__doc__.splitlines()[0])
    p.add_argument("--libdir", action="store_true", help="the directory of libnrt.so.1 and libnrt.so")
    p.add_argument("--includedir", action="store_true", help="the directory of nrt/*.h and ndl/*.h")
    p.add_argument("--shim", action="store_true", help="the device shim libnrt_emu_shim.so")
    p.add_argument("--cflags", action="store_true", help="-I for the headers")
    p.add_argument("--libs", action="store_true", help="-L, -Wl,-rpath and -lnrt")
    a = p.parse_args()
    words = []
    if a.libdir:
        words.append(_paths.libdir())
    if a.includedir:
        words.append(_paths.include_dir())
    if a.shim:
        words.append(_paths.shim_path())
    if a.cflags:
        words.append(f"-I{_paths.include_dir()}")
    if a.libs:
        words += [f"-L{_paths.libdir()}", f"-Wl,-rpath,{_paths.libdir()}", "-lnrt"]
    if not words:
        p.print_help()
        return
    print(" ".join(words))


if __name__ == "__main__":
    main()

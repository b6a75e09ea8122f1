"""The PEP 517 build backend of the nrt-emu wheel: maturin's, after building what maturin cannot.

``pip wheel python/``, ``pip install ./python`` and ``python3 python/build_wheel.py`` all build
through here (``pyproject.toml``: ``build-backend = "build_backend"``, ``backend-path = ["."]``).
The wheel's one compiled artifact is the ``nrt-emu`` command, which maturin builds
(``bindings = "bin"``); the drop-in ``libnrt.so.1`` (crate ``capi/``) and the device shim
``libnrt_emu_shim.so`` (crate ``shim/``) are libraries of other packages of the workspace, which
maturin does not build. So before maturin packs the wheel, this backend builds them with cargo
in the same profile and stages them with the headers into ``src/nrt_emu/`` as package data
(``[tool.maturin] include``): every wheel it makes is complete.

The profile is maturin's: release unless the build arguments (``-C maturin.build-args=...`` or
``MATURIN_PEP517_ARGS``) name ``--profile NAME``; a release wheel is stripped. ``CARGO`` and
``CARGO_TARGET_DIR`` are honoured; the libraries' staged copies lose their debug information
when ``strip`` (binutils) is installed. The setting ``-C nrt-emu.cargo=false`` takes the
library and the shim as already built in the profile directory.

Source distributions are refused: the wheel is built from the repository, where cargo can build
the library and the shim next to the command.
"""

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import maturin

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGE = HERE / "src" / "nrt_emu"
# The cargo builds of the libraries the wheel ships besides maturin's `nrt-emu` command. Cargo
# unifies features over the packages one invocation selects, and a unit built under other
# features is rebuilt: so the library (a dependency of the command) is built with the command's
# package selected, as maturin builds it, and the shim (no dependency of it) on its own. Then
# neither build, nor maturin's, makes another rebuild anything.
LIBRARY_BUILDS = (
    ("-p", "nrt-emu", "-p", "nrt-capi", "--lib"),
    ("-p", "nrt-emu-shim"),
)


def fail(message: str) -> None:
    """Stops the build, saying why."""
    sys.exit(f"nrt-emu wheel: {message}")


def target_dir() -> Path:
    """Cargo's target directory (a relative ``CARGO_TARGET_DIR`` is taken from the repository
    root, where cargo runs)."""
    return ROOT / os.environ.get("CARGO_TARGET_DIR", "target")


def profile_dir(profile: str) -> Path:
    return target_dir() / ("debug" if profile in ("dev", "test") else profile)


def build_args(config_settings=None) -> list:
    """maturin's build arguments for these settings, stripping a release build."""
    args = list(maturin.get_maturin_pep517_args(config_settings))
    if profile_of(args) == "release" and not any(a.startswith("--strip") for a in args):
        args.append("--strip")
    # The lowest manylinux tag the files keep to (maturin's PEP 517 default is the plain
    # `linux` tag); the package's tests check the shipped files against it.
    if "--compatibility" not in args and "--manylinux" not in args:
        args.append("--compatibility")
    return args


def profile_of(args: list) -> str:
    """The cargo profile maturin builds with for these arguments."""
    profile = "release"
    for i, a in enumerate(args):
        if a == "--profile" and i + 1 < len(args):
            profile = args[i + 1]
        elif a.startswith("--profile="):
            profile = a.split("=", 1)[1]
    return profile


def build_libraries(profile: str) -> None:
    """The ``cargo build``s of the library and the shim in ``profile`` (no-ops when fresh)."""
    if not (ROOT / "Cargo.toml").is_file() or not (ROOT / "capi").is_dir():
        fail(
            f"{ROOT} is not the nrt-emu repository: build the wheel from a checkout "
            "(pip wheel python/, pip install ./python or python3 python/build_wheel.py)"
        )
    cargo = os.environ.get("CARGO") or shutil.which("cargo")
    if not cargo:
        fail("cargo is not on PATH: the wheel's library and shim are built with cargo (https://rustup.rs)")
    for selection in LIBRARY_BUILDS:
        try:
            done = subprocess.run([cargo, "build", "--profile", profile, *selection], cwd=ROOT, check=False)
        except OSError as e:
            fail(f"cannot run {cargo}: {e}")
        if done.returncode != 0:
            fail(f"cargo build --profile {profile} {' '.join(selection)} failed (exit {done.returncode})")


def stage_library(src: Path, dst: Path) -> None:
    """Copies a shared library, without its debug information when ``strip`` is installed."""
    if not src.is_file():
        fail(f"{src} does not exist after cargo built it")
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


def maturin_on_path() -> None:
    """maturin's PEP 517 functions run the ``maturin`` command found on PATH: put the scripts
    directory of this Python first (a frontend's build environment is on PATH already; an
    environment that is not activated, running ``build_wheel.py`` or ``pip wheel
    --no-build-isolation``, is not)."""
    scripts = sysconfig.get_path("scripts")
    path = os.environ.get("PATH", "")
    if scripts and scripts not in path.split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join(p for p in (scripts, path) if p)


def prepare(config_settings=None) -> dict:
    """Builds (unless ``nrt-emu.cargo`` is ``false``: taken as built) and stages the library and
    the shim; returns the settings to hand maturin."""
    args = build_args(config_settings)
    profile = profile_of(args)
    if str((config_settings or {}).get("nrt-emu.cargo", "true")).lower() != "false":
        build_libraries(profile)
    stage(profile_dir(profile))
    maturin_on_path()
    print(f"nrt-emu wheel: staged libnrt.so.1, libnrt_emu_shim.so and the headers ({profile})", file=sys.stderr)
    return {**(config_settings or {}), "maturin.build-args": shlex.join(args)}


# PEP 517 hooks.


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    settings = prepare(config_settings)
    return maturin.build_wheel(wheel_directory, settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    settings = prepare(config_settings)
    return maturin.build_editable(wheel_directory, settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    fail(
        "no source distribution: the wheel ships libnrt.so.1 and the device shim, built with "
        "cargo from the repository; build the wheel from a checkout instead "
        "(pip wheel python/, pip install ./python or python3 python/build_wheel.py)"
    )


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    maturin_on_path()
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel
get_requires_for_build_wheel = maturin.get_requires_for_build_wheel
get_requires_for_build_editable = maturin.get_requires_for_build_editable

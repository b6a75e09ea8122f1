#!/usr/bin/env python3
"""Per-call overhead of ``model(**arrays)`` over the C API, on one model (default: the smallest
zoo model, transpose.trn2: 8 KiB in, 8 KiB out). Timing only; not a test.

    python python/bench/overhead.py [NEFF] [--target trn2] [--calls 2000] [--rounds 5]

Three ways to do one execution — write every input, ``nrt_execute``, read every output, into
fresh output arrays — each timed per call (median):

* ``model(**arrays)``: the NumPy API, in-process Device;
* ctypes: the same C calls made directly through ctypes, on tensors of their own, in the same
  process and session;
* C: the same calls from a C program (compiled with ``cc`` against the wheel's headers and
  library), in a process of its own.

The overhead is ``model(**arrays)`` minus C. The rounds alternate between the three so that
machine load affects them alike.
"""

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from ctypes import byref, c_void_p
from pathlib import Path

import numpy as np

import nrt_emu
from nrt_emu import _capi

ROOT = Path(__file__).resolve().parents[2]

C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#define TRY(x) \
    do { if ((x) != NRT_SUCCESS) { fprintf(stderr, "%s failed\n", #x); return 1; } } while (0)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    int calls = atoi(argv[2]), rounds = atoi(argv[3]);
    FILE *f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); rewind(f);
    void *neff = malloc(n); if (fread(neff, 1, n, f) != (size_t)n) return 1; fclose(f);
    TRY(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_model_t *model; TRY(nrt_load(neff, n, -1, -1, &model));
    nrt_tensor_info_array_t *info; TRY(nrt_get_model_tensor_info(model, &info));
    nrt_tensor_set_t *in, *out; TRY(nrt_allocate_tensor_set(&in)); TRY(nrt_allocate_tensor_set(&out));
    nrt_tensor_t *t[16]; void *buf[16]; int k = (int)info->tensor_count;
    for (int i = 0; i < k; i++) {
        nrt_tensor_info_t *e = &info->tensor_array[i];
        TRY(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, e->size, e->name, &t[i]));
        buf[i] = calloc(1, e->size);
        TRY(nrt_add_tensor_to_tensor_set(e->usage == NRT_TENSOR_USAGE_INPUT ? in : out, e->name, t[i]));
    }
    double *ns = malloc(sizeof(double) * calls);
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < calls; c++) {
            double t0 = now();
            for (int i = 0; i < k; i++)
                if (info->tensor_array[i].usage == NRT_TENSOR_USAGE_INPUT)
                    TRY(nrt_tensor_write(t[i], buf[i], 0, info->tensor_array[i].size));
            TRY(nrt_execute(model, in, out));
            for (int i = 0; i < k; i++)
                if (info->tensor_array[i].usage == NRT_TENSOR_USAGE_OUTPUT) {
                    void *o = malloc(info->tensor_array[i].size); /* a fresh output, as model() returns */
                    TRY(nrt_tensor_read(t[i], o, 0, info->tensor_array[i].size));
                    free(o);
                }
            ns[c] = now() - t0;
        }
        qsort(ns, calls, sizeof(double), cmp);
        printf("%.0f\n", ns[calls / 2]);
        fflush(stdout);
    }
    nrt_close();
    return 0;
}
"""


def median_per_call(fn, calls):
    ns = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        ns.append(time.perf_counter_ns() - t0)
    return statistics.median(ns)


def ctypes_runner(neff_bytes):
    """The C calls of one execution made directly through ctypes, on tensors of their own."""
    lib = _capi.library()
    model = c_void_p()
    assert lib.nrt_load(neff_bytes, len(neff_bytes), -1, -1, byref(model)) == 0
    where = _capi.ModelInfo()
    size = ctypes.c_size_t()
    assert lib.nrt_get_model_info(model, byref(where), ctypes.sizeof(where), byref(size)) == 0
    info = c_void_p()
    assert lib.nrt_get_model_tensor_info(model, byref(info)) == 0
    count = ctypes.c_uint64.from_address(info.value).value
    entries = list((_capi.TensorInfo * count).from_address(info.value + 8))
    sets = [c_void_p(), c_void_p()]
    for s in sets:
        assert lib.nrt_allocate_tensor_set(byref(s)) == 0
    ins, outs = [], []
    for e in entries:
        t = c_void_p()
        assert lib.nrt_tensor_allocate(0, where.vnc, e.size, e.name, byref(t)) == 0
        assert lib.nrt_add_tensor_to_tensor_set(sets[e.usage], e.name, t) == 0
        (ins if e.usage == 0 else outs).append((t, e.size))
    bufs = [np.zeros(size, np.uint8) for _, size in ins]
    write, read, execute = lib.nrt_tensor_write, lib.nrt_tensor_read, lib.nrt_execute

    def once():
        status = 0
        for (t, size), b in zip(ins, bufs):
            status |= write(t, b.ctypes.data, 0, size)
        status |= execute(model, sets[0], sets[1])
        for t, size in outs:
            o = np.empty(size, np.uint8)
            status |= read(t, o.ctypes.data, 0, size)
        return status

    assert once() == 0, "the direct ctypes execution failed"
    return once


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("neff", nargs="?", default=str(ROOT / "fixtures" / "neffs" / "transpose.trn2.neff"))
    p.add_argument("--target", default="trn2")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    cc = shutil.which("cc")
    with tempfile.TemporaryDirectory() as tmp:
        exe = None
        if cc:
            src = Path(tmp) / "overhead.c"
            src.write_text(C_PROGRAM)
            exe = Path(tmp) / "overhead"
            flags = [f"-I{nrt_emu.include_dir()}", f"-L{nrt_emu.libdir()}", f"-Wl,-rpath,{nrt_emu.libdir()}", "-lnrt"]
            subprocess.run([cc, "-O2", str(src), *flags, "-pthread", "-o", str(exe)], check=True)
        env = {**os.environ, "NRT_EMU_TARGET": a.target, "NEURON_RT_LOG_LEVEL": "ERROR"}
        results = {"model(**arrays)": [], "ctypes": [], "C": []}
        with nrt_emu.Device(target=a.target) as dev:
            model = dev.load(a.neff)
            arrays = {s.name: np.zeros(s.shape, s.dtype) for s in model.inputs}
            raw = ctypes_runner(Path(a.neff).read_bytes())
            for _ in range(a.calls // 10):  # warm up both
                model(**arrays)
                raw()
            for _ in range(a.rounds):
                results["model(**arrays)"].append(median_per_call(lambda: model(**arrays), a.calls))
                results["ctypes"].append(median_per_call(raw, a.calls))
                if exe:
                    out = subprocess.run(
                        [str(exe), a.neff, str(a.calls), "1"], env=env, capture_output=True, text=True, check=True
                    )
                    results["C"].append(float(out.stdout.split()[-1]))
    print(f"{Path(a.neff).name} on {a.target}: median ns per call over {a.rounds} rounds of {a.calls} calls")
    for k, v in results.items():
        if v:
            print(
                f"  {k:18s} {statistics.median(v) / 1e3:8.2f} us   (rounds: {', '.join(f'{x / 1e3:.2f}' for x in v)})"
            )
    if results["C"]:
        over = statistics.median(results["model(**arrays)"]) - statistics.median(results["C"])
        over_ct = statistics.median(results["model(**arrays)"]) - statistics.median(results["ctypes"])
        print(
            f"  overhead of model(**arrays) over C: {over / 1e3:.2f} us per call; "
            f"over direct ctypes: {over_ct / 1e3:.2f} us"
        )


if __name__ == "__main__":
    main()

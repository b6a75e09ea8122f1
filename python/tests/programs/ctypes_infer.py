"""A libnrt program of its own, through ctypes and nothing else (no nrt_emu import): opens the
library by its SONAME, runs the add model of a zoo NEFF on known inputs and checks the sums and
a few failing calls' statuses.   usage: python ctypes_infer.py ADD.NEFF"""

import ctypes
import struct
import sys

NRT_SUCCESS, NRT_INVALID = 0, 2


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 256),
        ("usage", ctypes.c_uint32),
        ("size", ctypes.c_size_t),
        ("dtype", ctypes.c_uint32),
        ("shape", ctypes.POINTER(ctypes.c_uint32)),
        ("ndim", ctypes.c_uint32),
    ]


def main(path):
    lib = ctypes.CDLL("libnrt.so.1")
    vp = ctypes.c_void_p
    lib.nrt_load.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(vp)]
    lib.nrt_get_model_tensor_info.argtypes = [vp, ctypes.POINTER(vp)]
    lib.nrt_free_model_tensor_info.argtypes = [vp]
    lib.nrt_tensor_allocate.argtypes = [
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_size_t,
        ctypes.c_char_p,
        ctypes.POINTER(vp),
    ]
    lib.nrt_tensor_write.argtypes = lib.nrt_tensor_read.argtypes = [
        vp,
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_size_t,
    ]
    lib.nrt_add_tensor_to_tensor_set.argtypes = [vp, ctypes.c_char_p, vp]
    lib.nrt_execute.argtypes = [vp, vp, vp]
    lib.nrt_unload.argtypes = [vp]
    lib.nrt_tensor_free.argtypes = [ctypes.POINTER(vp)]
    lib.nrt_destroy_tensor_set.argtypes = [ctypes.POINTER(vp)]

    assert lib.nrt_init(1, b"", b"") == NRT_SUCCESS
    neff = open(path, "rb").read()
    model = vp()
    assert lib.nrt_load(neff, len(neff), -1, -1, ctypes.byref(model)) == NRT_SUCCESS
    info = vp()
    assert lib.nrt_get_model_tensor_info(model, ctypes.byref(info)) == NRT_SUCCESS
    count = ctypes.c_uint64.from_address(info.value).value
    entries = (TensorInfo * count).from_address(info.value + 8)
    sets = {0: vp(), 1: vp()}
    for s in sets.values():
        assert lib.nrt_allocate_tensor_set(ctypes.byref(s)) == NRT_SUCCESS
    tensors, sizes = {}, {}
    for e in entries:
        t = vp()
        assert lib.nrt_tensor_allocate(0, 0, e.size, e.name, ctypes.byref(t)) == NRT_SUCCESS
        tensors[e.name], sizes[e.name] = t, e.size
        assert lib.nrt_add_tensor_to_tensor_set(sets[e.usage], e.name, t) == NRT_SUCCESS
    n = sizes[b"a"] // 4
    a = struct.pack(f"<{n}f", *[float(i % 97) for i in range(n)])
    b = struct.pack(f"<{n}f", *[0.5 * (i % 13) for i in range(n)])
    assert lib.nrt_tensor_write(tensors[b"a"], a, 0, len(a)) == NRT_SUCCESS
    assert lib.nrt_tensor_write(tensors[b"b"], b, 0, len(b)) == NRT_SUCCESS
    assert lib.nrt_execute(model, sets[0], sets[1]) == NRT_SUCCESS
    out = ctypes.create_string_buffer(sizes[b"out"])
    assert lib.nrt_tensor_read(tensors[b"out"], out, 0, sizes[b"out"]) == NRT_SUCCESS
    got = struct.unpack(f"<{n}f", out.raw)
    assert all(got[i] == (i % 97) + 0.5 * (i % 13) for i in range(n)), "wrong sums"
    # Failing calls answer their status.
    assert lib.nrt_execute(None, sets[0], sets[1]) == NRT_INVALID
    assert lib.nrt_tensor_write(tensors[b"a"], a, 1, len(a)) == NRT_INVALID  # past the end
    for t in tensors.values():
        lib.nrt_tensor_free(ctypes.byref(t))
    for s in sets.values():
        lib.nrt_destroy_tensor_set(ctypes.byref(s))
    assert lib.nrt_free_model_tensor_info(info) == NRT_SUCCESS
    assert lib.nrt_unload(model) == NRT_SUCCESS
    lib.nrt_close()
    print(f"ctypes program ok: {n} sums")


main(sys.argv[1])

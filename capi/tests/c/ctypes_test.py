"""The library from Python through ctypes (standard library only): load it by its SONAME, run a
model, and check statuses of bad calls.   usage: python3 ctypes_test.py NEFF"""
import ctypes
import sys

NRT_SUCCESS, NRT_INVALID, NRT_CLOSED = 0, 2, 14


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("usage", ctypes.c_uint32), ("size", ctypes.c_size_t),
                ("dtype", ctypes.c_uint32), ("shape", ctypes.POINTER(ctypes.c_uint32)), ("ndim", ctypes.c_uint32)]


def main():
    lib = ctypes.CDLL("libnrt.so.1")
    vp = ctypes.c_void_p
    lib.nrt_get_status_as_str.restype = ctypes.c_char_p
    lib.nrt_tensor_get_size.restype = ctypes.c_size_t
    lib.nrt_tensor_get_size.argtypes = [vp]
    for f in ("nrt_execute", "nrt_unload", "nrt_tensor_write", "nrt_tensor_read", "nrt_add_tensor_to_tensor_set"):
        getattr(lib, f).argtypes = None
    assert lib.nrt_init(1, b"", b"") == NRT_SUCCESS
    neff = open(sys.argv[1], "rb").read()
    model = vp()
    assert lib.nrt_load(neff, ctypes.c_size_t(len(neff)), -1, -1, ctypes.byref(model)) == NRT_SUCCESS
    info = vp()
    assert lib.nrt_get_model_tensor_info(model, ctypes.byref(info)) == NRT_SUCCESS
    count = ctypes.c_uint64.from_address(info.value).value
    entries = (TensorInfo * count).from_address(info.value + 8)
    ins, outs = vp(), vp()
    assert lib.nrt_allocate_tensor_set(ctypes.byref(ins)) == NRT_SUCCESS
    assert lib.nrt_allocate_tensor_set(ctypes.byref(outs)) == NRT_SUCCESS
    tensors = []
    for e in entries:
        t = vp()
        assert lib.nrt_tensor_allocate(0, 0, ctypes.c_size_t(e.size), e.name, ctypes.byref(t)) == NRT_SUCCESS
        assert lib.nrt_tensor_get_size(t) == e.size
        tensors.append(t)
        if e.usage == 0:
            data = bytes(e.size)
            assert lib.nrt_tensor_write(t, data, ctypes.c_size_t(0), ctypes.c_size_t(e.size)) == NRT_SUCCESS
            assert lib.nrt_add_tensor_to_tensor_set(ins, e.name, t) == NRT_SUCCESS
        else:
            assert lib.nrt_add_tensor_to_tensor_set(outs, e.name, t) == NRT_SUCCESS
    assert lib.nrt_execute(model, ins, outs) == NRT_SUCCESS
    out = [t for t, e in zip(tensors, entries) if e.usage == 1][0]
    size = [e.size for e in entries if e.usage == 1][0]
    buf = ctypes.create_string_buffer(size)
    assert lib.nrt_tensor_read(out, buf, ctypes.c_size_t(0), ctypes.c_size_t(size)) == NRT_SUCCESS
    assert lib.nrt_execute(None, ins, outs) == NRT_INVALID
    assert lib.nrt_get_status_as_str(NRT_INVALID) == b"NRT_INVALID"
    assert lib.nrt_free_model_tensor_info(info) == NRT_SUCCESS
    assert lib.nrt_unload(model) == NRT_SUCCESS
    assert lib.nrt_unload(model) == NRT_INVALID
    lib.nrt_close()
    assert lib.nrt_unload(model) == NRT_CLOSED
    print("ctypes ok: %d tensors" % count)


main()

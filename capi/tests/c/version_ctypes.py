"""nrt_get_version through ctypes (standard library only), the way a Python client gates on the
runtime version: load the library by its SONAME, read nrt_version_t, print
"version <major>.<minor>.<patch>.<maintenance> | <rt_detail> | <git_hash>"."""
import ctypes


class Version(ctypes.Structure):
    _fields_ = [("rt_major", ctypes.c_uint64), ("rt_minor", ctypes.c_uint64),
                ("rt_patch", ctypes.c_uint64), ("rt_maintenance", ctypes.c_uint64),
                ("rt_detail", ctypes.c_char * 128), ("git_hash", ctypes.c_char * 64)]


lib = ctypes.CDLL("libnrt.so.1")
lib.nrt_get_version.argtypes = [ctypes.POINTER(Version), ctypes.c_size_t]
v = Version()
assert lib.nrt_get_version(ctypes.byref(v), ctypes.sizeof(v)) == 0
# A "runtime >= 2" gate, as frameworks write it.
assert (v.rt_major, v.rt_minor) >= (2, 0), (v.rt_major, v.rt_minor)
print("version %d.%d.%d.%d | %s | %s" % (v.rt_major, v.rt_minor, v.rt_patch, v.rt_maintenance,
                                        v.rt_detail.decode(), v.git_hash.decode()))

/*
 * The variadic entry points of the nrt-emu device shim.
 *
 * `open`, `openat`, `fcntl` and `ioctl` are C variadic functions. Stable Rust can call a
 * variadic function but cannot define one (`c_variadic` is unstable), and defining them in Rust
 * with a fixed parameter list would only happen to work on some calling conventions. So this
 * file defines them, reads the optional argument with `va_arg` exactly as glibc's own wrappers do
 * (the mode only when the flags require one; a pointer-sized argument for fcntl and ioctl), and
 * hands a fixed parameter list to the Rust side (src/entry.rs), which decides between the
 * emulated device and the real libc function.
 *
 * They are named `nrt_emu_shim_c_<name>`, not `<name>`: rustc exports from a cdylib only the
 * symbols Rust defines, so the libc names are Rust naked functions (src/trampoline.rs) that jump
 * here with the caller's registers and stack untouched — this function then sees the original
 * variadic call exactly.
 *
 * The `variant` numbers tell the Rust side which real function to forward to; they match
 * `entry::OpenVariant` and `entry::FcntlVariant`.
 */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/types.h>

int nrt_emu_shim_openat(int dirfd, const char *path, int flags, unsigned int mode, int variant);
int nrt_emu_shim_fcntl(int fd, int cmd, void *arg, int variant);
int nrt_emu_shim_ioctl(int fd, unsigned long request, void *arg);

/* glibc's __OPEN_NEEDS_MODE: a mode argument was passed only with O_CREAT or O_TMPFILE. */
#define NEEDS_MODE(flags) (((flags) & O_CREAT) != 0 || ((flags) & O_TMPFILE) == O_TMPFILE)

#define OPEN_MODE(flags, last, mode)                                                              \
    do {                                                                                          \
        if (NEEDS_MODE(flags)) {                                                                  \
            va_list ap;                                                                           \
            va_start(ap, last);                                                                   \
            mode = va_arg(ap, mode_t);                                                            \
            va_end(ap);                                                                           \
        }                                                                                         \
    } while (0)

int nrt_emu_shim_c_open(const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, flags, mode);
    return nrt_emu_shim_openat(AT_FDCWD, path, flags, mode, 0);
}

int nrt_emu_shim_c_open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, flags, mode);
    return nrt_emu_shim_openat(AT_FDCWD, path, flags, mode, 1);
}

int nrt_emu_shim_c_openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, flags, mode);
    return nrt_emu_shim_openat(dirfd, path, flags, mode, 2);
}

int nrt_emu_shim_c_openat64(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, flags, mode);
    return nrt_emu_shim_openat(dirfd, path, flags, mode, 3);
}

/* Like glibc: the third argument is read as a pointer whatever the command (an int argument
 * occupies the same register or slot), and commands without one ignore it. */
#define FCNTL_ARG(cmd, arg)                                                                       \
    do {                                                                                          \
        va_list ap;                                                                               \
        va_start(ap, cmd);                                                                        \
        arg = va_arg(ap, void *);                                                                 \
        va_end(ap);                                                                               \
    } while (0)

int nrt_emu_shim_c_fcntl(int fd, int cmd, ...) {
    void *arg;
    FCNTL_ARG(cmd, arg);
    return nrt_emu_shim_fcntl(fd, cmd, arg, 0);
}

int nrt_emu_shim_c_fcntl64(int fd, int cmd, ...) {
    void *arg;
    FCNTL_ARG(cmd, arg);
    return nrt_emu_shim_fcntl(fd, cmd, arg, 1);
}

int nrt_emu_shim_c_ioctl(int fd, unsigned long request, ...) {
    void *arg;
    va_list ap;
    va_start(ap, request);
    arg = va_arg(ap, void *);
    va_end(ap);
    return nrt_emu_shim_ioctl(fd, request, arg);
}

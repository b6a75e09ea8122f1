//! Checks of the caller's pointers, strings and buffers: each NULL, over-long or malformed
//! argument is an `NRT_INVALID` naming the argument. What cannot be checked (that a non-NULL
//! pointer really points at `len` bytes) is the caller's contract, as in C. Also the strings
//! and string lists handed to the caller in `malloc`ed memory, which it frees.

use std::ffi::{c_char, c_void, CString};

use nrt_runtime::{Error, Result};

/// Longest string read from the caller when no field bounds it (paths, event names).
pub const STRING_MAX: usize = 4096;

/// `p` as a mutable reference, or `NRT_INVALID` naming `arg`.
///
/// # Safety
///
/// A non-NULL `p` points at a valid, writable `T` not aliased for the duration of the call.
pub unsafe fn out<'a, T>(p: *mut T, arg: &str) -> Result<&'a mut T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_mut() }.ok_or_else(|| null(arg))
}

/// `p` as a shared reference, or `NRT_INVALID` naming `arg`.
///
/// # Safety
///
/// A non-NULL `p` points at a valid `T`.
pub unsafe fn inp<'a, T>(p: *const T, arg: &str) -> Result<&'a T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| null(arg))
}

/// The error for a NULL argument.
pub fn null(arg: &str) -> Error {
    Error::invalid(format!("argument `{arg}` is NULL"))
}

/// A NUL-terminated UTF-8 string of at most `max` bytes (without the NUL): read at most
/// `max + 1` bytes, so an unterminated or over-long string is refused, never over-read.
///
/// # Safety
///
/// A non-NULL `p` points at a string terminated within `max + 1` bytes, or at `max + 1`
/// readable bytes.
pub unsafe fn string<'a>(p: *const c_char, arg: &str, max: usize) -> Result<&'a str> {
    if p.is_null() {
        return Err(null(arg));
    }
    let mut len = 0usize;
    // SAFETY: reading byte `len <= max` is within the caller's contract.
    while unsafe { *p.add(len) } != 0 {
        len += 1;
        if len > max {
            return Err(Error::invalid(format!(
                "argument `{arg}` is longer than {max} bytes"
            )));
        }
    }
    // SAFETY: the `len` bytes before the NUL were just read.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|_| Error::invalid(format!("argument `{arg}` is not UTF-8")))
}

/// An optional string: NULL is `""`.
///
/// # Safety
///
/// As [`string`].
pub unsafe fn opt_string<'a>(p: *const c_char, arg: &str, max: usize) -> Result<&'a str> {
    if p.is_null() {
        Ok("")
    } else {
        // SAFETY: forwarded.
        unsafe { string(p, arg, max) }
    }
}

/// `len` bytes at `p` (NULL is allowed only when `len` is 0).
///
/// # Safety
///
/// A non-NULL `p` points at `len` readable bytes that are not written during the call.
pub unsafe fn bytes<'a>(p: *const c_void, len: usize, arg: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(arg));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes at `p` (NULL is allowed only when `len` is 0).
///
/// # Safety
///
/// A non-NULL `p` points at `len` writable bytes not otherwise accessed during the call.
pub unsafe fn bytes_mut<'a>(p: *mut c_void, len: usize, arg: &str) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null(arg));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// Writes `v` to an optional out-parameter.
///
/// # Safety
///
/// A non-NULL `p` is valid for a write of `T`.
pub unsafe fn write_opt<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: the caller's contract.
        unsafe { p.write(v) };
    }
}

/// A `malloc`ed copy of `s` (NUL-terminated), for strings the caller frees.
pub fn c_string(s: &str) -> Result<*mut c_char> {
    let c = CString::new(s).map_err(|_| Error::invalid("string contains NUL"))?;
    // SAFETY: `c` is NUL-terminated; strdup copies it into malloc'ed memory (checked).
    let p = unsafe { libc::strdup(c.as_ptr()) };
    if p.is_null() {
        return Err(Error::resource("out of memory"));
    }
    Ok(p)
}

/// Hands `names` to the caller as a `malloc`ed array of `malloc`ed strings; `arg` is the
/// list argument's name (for the NULL error).
///
/// # Safety
///
/// `list` and `count` are NULL or writable.
pub unsafe fn string_list(
    names: &[&str],
    list: *mut *mut *const c_char,
    arg: &str,
    count: *mut usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let (list, count) = unsafe { (out(list, arg)?, out(count, "count")?) };
    let n = names.len().max(1);
    // SAFETY: calloc has no preconditions; checked for NULL.
    let arr =
        unsafe { libc::calloc(n, std::mem::size_of::<*const c_char>()) }.cast::<*const c_char>();
    if arr.is_null() {
        return Err(Error::resource("out of memory"));
    }
    for (i, name) in names.iter().enumerate() {
        match c_string(name) {
            // SAFETY: `arr` holds `n > i` pointers.
            Ok(p) => unsafe { arr.add(i).write(p) },
            Err(e) => {
                // SAFETY: the first `i` entries were allocated above.
                unsafe { free_string_list(arr, i) };
                return Err(e);
            }
        }
    }
    *list = arr;
    *count = names.len();
    Ok(())
}

/// Frees a list made by [`string_list`].
///
/// # Safety
///
/// `list` is NULL or came from [`string_list`] with at least `count` entries.
pub unsafe fn free_string_list(list: *const *const c_char, count: usize) {
    if list.is_null() {
        return;
    }
    for i in 0..count {
        // SAFETY: entry `i < count` is a malloc'ed string or NULL.
        unsafe { libc::free((*list.add(i)).cast_mut().cast()) };
    }
    // SAFETY: the array is malloc'ed.
    unsafe { libc::free(list.cast_mut().cast()) };
}

//! Tensor sets: named bindings to tensor handles. A set does not own its tensors; a handle that
//! was freed is found at execution and refused there.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};

use nrt_runtime::{Error, NrtStatus};

use crate::guard;
use crate::ptr;
use crate::session::{self, SETS};
use crate::types::{NrtStatusC, TENSOR_NAME_MAX};

/// `nrt_allocate_tensor_set`.
///
/// # Safety
///
/// `result` is NULL or writable.
pub unsafe extern "C" fn nrt_allocate_tensor_set(result: *mut *mut c_void) -> NrtStatusC {
    guard::status("nrt_allocate_tensor_set", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(result, "result")? };
        *out = SETS.insert(BTreeMap::new()) as *mut c_void;
        Ok(())
    })
}

/// `nrt_destroy_tensor_set`: frees the set (not its tensors) and clears `*tensor_set`.
///
/// # Safety
///
/// `tensor_set` is NULL or points at a writable handle.
pub unsafe extern "C" fn nrt_destroy_tensor_set(tensor_set: *mut *mut c_void) {
    guard::void("nrt_destroy_tensor_set", || {
        // SAFETY: the caller's contract.
        let slot = unsafe { ptr::out(tensor_set, "tensor_set")? };
        SETS.remove(*slot as usize, "*tensor_set")?;
        *slot = std::ptr::null_mut();
        Ok(())
    })
}

/// `nrt_add_tensor_to_tensor_set`: adds or replaces the binding of `tensor_name`.
///
/// # Safety
///
/// `tensor_name` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_add_tensor_to_tensor_set(
    tensor_set: *mut c_void,
    tensor_name: *const c_char,
    tensor: *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_add_tensor_to_tensor_set", || {
        // SAFETY: the caller's contract.
        let name = unsafe { ptr::string(tensor_name, "tensor_name", TENSOR_NAME_MAX - 1)? };
        session::with(|_, s| s.tensor(tensor as usize, "tensor").map(|_| ()))?;
        SETS.with(tensor_set as usize, "tensor_set", |m| {
            m.insert(name.to_string(), tensor as usize);
        })
    })
}

/// `nrt_get_tensor_from_tensor_set`: `NRT_FAILURE` when nothing is bound to the name.
///
/// # Safety
///
/// `tensor_name` is NULL or a NUL-terminated string; `tensor` is NULL or writable.
pub unsafe extern "C" fn nrt_get_tensor_from_tensor_set(
    tensor_set: *mut c_void,
    tensor_name: *const c_char,
    tensor: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_get_tensor_from_tensor_set", || {
        // SAFETY: the caller's contract.
        let name = unsafe { ptr::string(tensor_name, "tensor_name", TENSOR_NAME_MAX - 1)? };
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(tensor, "tensor")? };
        let found = SETS.with(tensor_set as usize, "tensor_set", |m| m.get(name).copied())?;
        let t = found.ok_or_else(|| {
            Error::new(
                NrtStatus::Failure,
                format!("the tensor set has no tensor named {name:?}"),
            )
        })?;
        *out = t as *mut c_void;
        Ok(())
    })
}

//! The entry points called in process: many threads at once, and device memory back at its
//! baseline after a session that leaves models and tensors behind.

use std::ffi::c_void;
use std::sync::Mutex;

use nrt::api::{lifecycle, model, set, tensor};

/// The session is process-wide: these tests take turns.
pub static SERIAL: Mutex<()> = Mutex::new(());

fn neff() -> Vec<u8> {
    std::fs::read(crate::support::neff("add.trn2.neff")).unwrap()
}

#[test]
fn concurrent_calls_from_many_threads() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    lifecycle::reset_for_tests();
    // SAFETY: NULL strings are accepted as empty.
    assert_eq!(
        unsafe { lifecycle::nrt_init(1, std::ptr::null(), std::ptr::null()) },
        0
    );
    let bytes = neff();
    std::thread::scope(|s| {
        for w in 0..8 {
            let bytes = &bytes;
            s.spawn(move || {
                for i in 0..6 {
                    let mut m: *mut c_void = std::ptr::null_mut();
                    // SAFETY: `bytes` is a live buffer; `m` is writable.
                    let st = unsafe {
                        model::nrt_load(bytes.as_ptr().cast(), bytes.len(), -1, -1, &mut m)
                    };
                    assert_eq!(st, 0, "worker {w} load {i}");
                    let mut t: *mut c_void = std::ptr::null_mut();
                    // SAFETY: the name is NUL-terminated; `t` is writable.
                    let st = unsafe {
                        tensor::nrt_tensor_allocate(0, w % 4, 4096, c"t".as_ptr(), &mut t)
                    };
                    assert_eq!(st, 0);
                    let data = [w as u8; 4096];
                    let mut back = [0u8; 4096];
                    // SAFETY: the buffers hold 4096 bytes.
                    unsafe {
                        assert_eq!(
                            tensor::nrt_tensor_write(t, data.as_ptr().cast(), 0, 4096),
                            0
                        );
                        assert_eq!(
                            tensor::nrt_tensor_read(t, back.as_mut_ptr().cast(), 0, 4096),
                            0
                        );
                    }
                    assert_eq!(back, data, "another thread's tensor leaked into this one");
                    let mut set_: *mut c_void = std::ptr::null_mut();
                    // SAFETY: `set_` is writable, the name NUL-terminated.
                    unsafe {
                        assert_eq!(set::nrt_allocate_tensor_set(&mut set_), 0);
                        assert_eq!(set::nrt_add_tensor_to_tensor_set(set_, c"a".as_ptr(), t), 0);
                        set::nrt_destroy_tensor_set(&mut set_);
                        tensor::nrt_tensor_free(&mut t);
                    }
                    assert!(t.is_null());
                    assert_eq!(model::nrt_unload(m), 0);
                    assert_ne!(model::nrt_unload(m), 0, "unloaded twice");
                }
            });
        }
    });
    lifecycle::nrt_close();
    lifecycle::reset_for_tests();
}

#[test]
fn nrt_close_releases_what_the_program_left_behind() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    lifecycle::reset_for_tests();
    let bytes = neff();
    let mut stats = nrt::types::NrtVncMemoryStats {
        bytes_used: 0,
        bytes_limit: 0,
    };
    let mut used = Vec::new();
    for _round in 0..2 {
        // SAFETY: NULL strings are accepted.
        assert_eq!(
            unsafe { lifecycle::nrt_init(1, std::ptr::null(), std::ptr::null()) },
            0
        );
        // SAFETY: `stats` is writable for its size.
        unsafe {
            assert_eq!(
                nrt::api::device::nrt_get_vnc_memory_stats(0, &mut stats, 16, std::ptr::null_mut()),
                0
            )
        };
        used.push(stats.bytes_used);
        let mut m: *mut c_void = std::ptr::null_mut();
        let mut t: *mut c_void = std::ptr::null_mut();
        // SAFETY: live buffers and writable handles.
        unsafe {
            assert_eq!(
                model::nrt_load(bytes.as_ptr().cast(), bytes.len(), 0, -1, &mut m),
                0
            );
            assert_eq!(
                tensor::nrt_tensor_allocate(0, 0, 1 << 20, c"left".as_ptr(), &mut t),
                0
            );
            nrt::api::device::nrt_get_vnc_memory_stats(0, &mut stats, 16, std::ptr::null_mut());
        }
        assert!(stats.bytes_used > used[0] + (1 << 20));
        lifecycle::nrt_close();
        assert_eq!(model::nrt_unload(m), 14, "NRT_CLOSED after nrt_close");
        lifecycle::reset_for_tests();
    }
    assert_eq!(used[0], used[1]);
}

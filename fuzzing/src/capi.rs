//! The `capi` target: random sequences of libnrt C API calls with hostile arguments (NULL,
//! stale and foreign handles, out-of-range cores, oversized names, out-of-bounds offsets,
//! arbitrary NEFF bytes), through the same entry points `libnrt.so.1` exports. Every call must
//! return a documented status, and when the session is closed the device's memory must be
//! exactly where it was right after `nrt_init`.
//!
//! Each input is one session: `nrt_init`, up to [`MAX_OPS`] operations decoded from the bytes,
//! `nrt_close`. The session is process-wide, so runs take turns on a lock. Only the zoo's
//! models are executed (a NEFF made of fuzz bytes may load, but executing it could legitimately
//! run until the execution timeout).

use std::ffi::{c_char, c_void};
use std::sync::{Mutex, OnceLock};

use nrt::api::{device, exec, lifecycle, model, nrta, set, tensor};
use nrt_runtime::NrtStatus;

use crate::input::{Input, Out};

/// Most operations one input runs.
pub const MAX_OPS: usize = 48;
/// Largest buffer an operation uses.
const MAX_BYTES: usize = 1 << 16;

static SESSION: Mutex<()> = Mutex::new(());

fn zoo() -> &'static [Vec<u8>] {
    static ZOO: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    ZOO.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/neffs");
        ["add.trn2.neff", "mlp2.trn2.neff", "transpose.trn2.neff"]
            .iter()
            .filter_map(|f| std::fs::read(format!("{dir}/{f}")).ok())
            .collect()
    })
}

fn check(what: &str, status: u32) {
    assert!(
        NrtStatus::from_code(status).is_some(),
        "{what} returned {status}, which is not an NRT_STATUS"
    );
}

#[derive(Default)]
struct Pools {
    models: Vec<(usize, bool)>,
    tensors: Vec<usize>,
    sets: Vec<usize>,
    trackers: Vec<usize>,
    seqs: Vec<u64>,
    buffers: Vec<Box<[u8]>>,
}

/// A handle from `pool`, or a hostile value: NULL, a freed or foreign handle, garbage.
fn pick(inp: &mut Input, pool: &[usize], others: &[usize]) -> *mut c_void {
    let b = inp.u8();
    let v = match b % 8 {
        0 => 0,
        1 => others
            .get(b as usize / 8 % others.len().max(1))
            .copied()
            .unwrap_or(1),
        2 => inp.u64() as usize,
        _ => pool
            .get(b as usize % pool.len().max(1))
            .copied()
            .unwrap_or(0),
    };
    v as *mut c_void
}

fn name(inp: &mut Input) -> Vec<u8> {
    let mut n = match inp.u8() % 4 {
        0 => vec![b'n'; 300],
        _ => inp.bytes(8).iter().map(|b| b'a' + b % 26).collect(),
    };
    n.push(0);
    n
}

fn size(inp: &mut Input) -> usize {
    match inp.u8() % 4 {
        0 => 0,
        1 => inp.u32() as usize % (MAX_BYTES + 16),
        2 => (inp.u16() as usize % 4096) * 4,
        _ => 1 << (inp.u8() % 20),
    }
}

/// One operation; false when the input asked to stop. Each arm is one family of calls, in
/// its own function below; the order in which they read `inp` is the corpus's format.
fn op(inp: &mut Input, p: &mut Pools) -> bool {
    let all: Vec<usize> = p.tensors.iter().chain(&p.sets).copied().collect();
    let models: Vec<usize> = p.models.iter().map(|m| m.0).collect();
    match inp.u8() % 20 {
        0 | 1 => load(inp, p),
        2 => unload(inp, &all, &models),
        3 | 4 => tensor_allocate(inp, p),
        5 => tensor_free(inp, p, &models),
        6 | 7 => tensor_read_write(inp, p, &all),
        8 => tensor_copy_memset(inp, p, &all),
        9 => tensor_slice(inp, p, &all),
        10 => tensor_attach(inp, p, &all),
        11 => set_allocate(p),
        12 => set_add(inp, p, &all),
        13 => set_destroy(inp, p, &all),
        14 | 15 => execute(inp, p, &all),
        16 => async_write_read(inp, p, &all),
        17 => trackers(inp, p, &all),
        18 => info(inp, &all, &models),
        _ => return false,
    }
    true
}

/// Loads random bytes or a zoo model on a random core.
fn load(inp: &mut Input, p: &mut Pools) {
    let mut m = std::ptr::null_mut();
    let (bytes, zoo_model) = match inp.u8() % 4 {
        0 => (inp.bytes(2048).to_vec(), false),
        i => (
            zoo()
                .get((i as usize - 1) % zoo().len().max(1))
                .cloned()
                .unwrap_or_default(),
            true,
        ),
    };
    let vnc = (inp.u8() % 6) as i32 - 1;
    // SAFETY: `bytes` is live; `m` is writable.
    let st = unsafe { model::nrt_load(bytes.as_ptr().cast(), bytes.len(), vnc, -1, &mut m) };
    check("nrt_load", st);
    if st == 0 {
        p.models.push((m as usize, zoo_model));
    }
}

/// Unloads a model or anything else.
fn unload(inp: &mut Input, all: &[usize], models: &[usize]) {
    let m = pick(inp, models, all);
    check("nrt_unload", model::nrt_unload(m));
}

/// Allocates a tensor with a random name, placement, core and size.
fn tensor_allocate(inp: &mut Input, p: &mut Pools) {
    let mut t = std::ptr::null_mut();
    let n = name(inp);
    let placement = u32::from(inp.u8() % 4);
    let vnc = (inp.u8() % 6) as i32 - 1;
    let sz = size(inp);
    // SAFETY: `n` is NUL-terminated; `t` is writable.
    let st = unsafe { tensor::nrt_tensor_allocate(placement, vnc, sz, n.as_ptr().cast(), &mut t) };
    check("nrt_tensor_allocate", st);
    if st == 0 {
        p.tensors.push(t as usize);
    }
}

/// Frees a tensor or anything else.
fn tensor_free(inp: &mut Input, p: &mut Pools, models: &[usize]) {
    let mut t = pick(inp, &p.tensors, models);
    // SAFETY: `t` is a local the call may clear.
    unsafe { tensor::nrt_tensor_free(&mut t) };
}

/// Reads or writes a tensor, from or into a host buffer or NULL.
fn tensor_read_write(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let t = pick(inp, &p.tensors, all);
    let off = size(inp);
    let sz = size(inp).min(MAX_BYTES);
    let mut buf = vec![0u8; sz];
    let null = inp.u8().is_multiple_of(8);
    let b: *mut c_void = if null {
        std::ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    };
    // SAFETY: `b` is NULL or holds `sz` bytes.
    let st = unsafe {
        if inp.bool() {
            tensor::nrt_tensor_read(t, b, off, sz)
        } else {
            tensor::nrt_tensor_write(t, b, off, sz)
        }
    };
    check("nrt_tensor_read/write", st);
}

/// Copies between two tensors, then memsets the destination.
fn tensor_copy_memset(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let (s, d) = (pick(inp, &p.tensors, all), pick(inp, &p.tensors, all));
    let (a, b, n) = (size(inp), size(inp), size(inp));
    check("nrt_tensor_copy", tensor::nrt_tensor_copy(s, a, d, b, n));
    check(
        "nrt_tensor_memset",
        tensor::nrt_tensor_memset(d, a as u64, 0x5A, n),
    );
}

/// Allocates a slice of a tensor.
fn tensor_slice(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let src = pick(inp, &p.tensors, all);
    let (off, sz) = (size(inp), size(inp));
    let n = name(inp);
    let mut t = std::ptr::null_mut();
    // SAFETY: `n` is NUL-terminated; `t` is writable.
    let st = unsafe { tensor::nrt_tensor_allocate_slice(src, off, sz, n.as_ptr().cast(), &mut t) };
    check("nrt_tensor_allocate_slice", st);
    if st == 0 {
        p.tensors.push(t as usize);
    }
}

/// Attaches a host buffer to a new empty tensor or to another one.
fn tensor_attach(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let mut t = std::ptr::null_mut();
    // SAFETY: the name is NUL-terminated; `t` is writable.
    let st = unsafe { tensor::nrt_tensor_allocate_empty(c"e".as_ptr(), &mut t) };
    check("nrt_tensor_allocate_empty", st);
    let sz = size(inp).max(1);
    let mut buf = vec![0u8; sz].into_boxed_slice();
    let target = if inp.bool() {
        t
    } else {
        pick(inp, &p.tensors, all)
    };
    // SAFETY: `buf` is kept in the pools until after nrt_close.
    let st = unsafe { tensor::nrt_tensor_attach_buffer(target, buf.as_mut_ptr().cast(), sz) };
    check("nrt_tensor_attach_buffer", st);
    p.buffers.push(buf);
    if !t.is_null() {
        p.tensors.push(t as usize);
    }
}

/// Allocates a tensor set.
fn set_allocate(p: &mut Pools) {
    let mut s = std::ptr::null_mut();
    // SAFETY: `s` is writable.
    check("nrt_allocate_tensor_set", unsafe {
        set::nrt_allocate_tensor_set(&mut s)
    });
    p.sets.push(s as usize);
}

/// Adds a tensor to a set under one of a few names.
fn set_add(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let s = pick(inp, &p.sets, all);
    let t = pick(inp, &p.tensors, all);
    let names: [&[u8]; 5] = [b"a\0", b"b\0", b"out\0", b"x\0", b"in\0"];
    let n = names[inp.u8() as usize % 5];
    // SAFETY: `n` is NUL-terminated.
    let st = unsafe { set::nrt_add_tensor_to_tensor_set(s, n.as_ptr().cast::<c_char>(), t) };
    check("nrt_add_tensor_to_tensor_set", st);
}

/// Destroys a set or anything else.
fn set_destroy(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let mut s = pick(inp, &p.sets, all);
    // SAFETY: `s` is a local the call may clear.
    unsafe { set::nrt_destroy_tensor_set(&mut s) };
}

/// Executes a zoo model (or NULL), synchronously or scheduled.
fn execute(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let zoo_models: Vec<usize> = p.models.iter().filter(|m| m.1).map(|m| m.0).collect();
    let m = pick(inp, &zoo_models, all);
    if !m.is_null() && !zoo_models.contains(&(m as usize)) {
        return;
    }
    let (i, o) = (pick(inp, &p.sets, all), pick(inp, &p.sets, all));
    if inp.bool() {
        check("nrt_execute", exec::nrt_execute(m, i, o));
    } else {
        let mut seq = 0;
        // SAFETY: `seq` is writable.
        let st = unsafe { nrta::nrta_execute_schedule(m, i, o, 0, std::ptr::null_mut(), &mut seq) };
        check("nrta_execute_schedule", st);
        if st == 0 {
            p.seqs.push(seq);
        }
    }
}

/// Schedules a tensor write and a read through an error tracker.
fn async_write_read(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let t = pick(inp, &p.tensors, all);
    let tracker = pick(inp, &p.trackers, all);
    let sz = size(inp).min(MAX_BYTES);
    let mut buf = vec![0u8; sz];
    let mut seq = 0;
    // SAFETY: `buf` holds `sz` bytes; `seq` is writable.
    let st = unsafe {
        nrta::nrta_tensor_write(
            t,
            buf.as_ptr().cast(),
            size(inp) as u64,
            sz as u64,
            i32::from(inp.u8() % 3),
            tracker,
            &mut seq,
        )
    };
    check("nrta_tensor_write", st);
    // SAFETY: as above.
    let st2 = unsafe {
        nrta::nrta_tensor_read(
            buf.as_mut_ptr().cast(),
            t,
            0,
            sz as u64,
            0,
            tracker,
            &mut seq,
        )
    };
    check("nrta_tensor_read", st2);
    if st == 0 || st2 == 0 {
        p.seqs.push(seq);
    }
}

/// Creates an error tracker, reads one's list and asks whether a sequence completed.
fn trackers(inp: &mut Input, p: &mut Pools, all: &[usize]) {
    let mut t = std::ptr::null_mut();
    // SAFETY: `t` is writable.
    let st = unsafe { nrta::nrta_error_tracker_create(u32::from(inp.u8() % 5), &mut t) };
    check("nrta_error_tracker_create", st);
    if st == 0 {
        p.trackers.push(t as usize);
    }
    let tr = pick(inp, &p.trackers, all);
    let (mut list, mut n) = (std::ptr::null(), 0usize);
    // SAFETY: out-parameters are writable.
    check("nrta_error_tracker_get_list", unsafe {
        nrta::nrta_error_tracker_get_list(tr, &mut list, &mut n)
    });
    let seq = p.seqs.get(inp.u8() as usize % p.seqs.len().max(1)).copied();
    let seq = seq.unwrap_or_else(|| inp.u64());
    let mut done = false;
    // SAFETY: `done` is writable.
    check("nrta_is_completed", unsafe {
        nrta::nrta_is_completed(seq ^ u64::from(inp.u8() % 2), &mut done)
    });
}

/// Reads a model's tensor info (freeing it twice) and a core's memory stats.
fn info(inp: &mut Input, all: &[usize], models: &[usize]) {
    let m = pick(inp, models, all);
    let mut info = std::ptr::null_mut();
    // SAFETY: `info` is writable.
    let st = unsafe { model::nrt_get_model_tensor_info(m, &mut info) };
    check("nrt_get_model_tensor_info", st);
    if st == 0 {
        // SAFETY: the block came from the library; a second free must be refused.
        unsafe {
            check(
                "nrt_free_model_tensor_info",
                model::nrt_free_model_tensor_info(info),
            );
            check(
                "nrt_free_model_tensor_info",
                model::nrt_free_model_tensor_info(info),
            );
        }
    }
    let mut stats = nrt::types::NrtVncMemoryStats {
        bytes_used: 0,
        bytes_limit: 0,
    };
    // SAFETY: `stats` is writable for its size.
    let st = unsafe {
        device::nrt_get_vnc_memory_stats(
            u32::from(inp.u8() % 6),
            &mut stats,
            16,
            std::ptr::null_mut(),
        )
    };
    check("nrt_get_vnc_memory_stats", st);
}

/// Runs one session of operations decoded from `data`.
pub fn capi(data: &[u8]) {
    let _turn = SESSION.lock().unwrap_or_else(|p| p.into_inner());
    lifecycle::reset_for_tests();
    // SAFETY: NULL version strings are accepted.
    let st = unsafe { lifecycle::nrt_init(1, std::ptr::null(), std::ptr::null()) };
    assert_eq!(st, 0, "nrt_init");
    let (device, cores) = nrt::session::NRT
        .with_session(|rt, _| Ok((rt.hal().clone(), rt.target().spec().nc_count)))
        .expect("an open session");
    let usage = |device: &dyn nrt_hal::Hal| -> Vec<(u64, u64)> {
        (0..cores)
            .map(|n| {
                let u = device
                    .memory_usage(nrt_hal::NcIndex(n))
                    .expect("memory usage");
                (u.device_bytes(), u.host_bytes())
            })
            .collect()
    };
    let baseline = usage(&*device);
    let mut inp = Input::new(data);
    let mut pools = Pools::default();
    for _ in 0..MAX_OPS {
        if inp.is_empty() || !op(&mut inp, &mut pools) {
            break;
        }
    }
    lifecycle::nrt_close();
    assert_eq!(usage(&*device), baseline, "device memory after nrt_close");
    lifecycle::reset_for_tests();
    drop(pools);
}

/// Hand-made programs: a full inference through the API, and a hostile mix.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut full = Out::default();
    // load the zoo's add model on core 0
    full.u8(0).u8(1).u8(1);
    // three 256 KiB device tensors on core 0 (add's a, b and out)
    for _ in 0..3 {
        full.u8(3).u8(1).bytes(b"abcdefgh").u8(0).u8(1).u8(3).u8(18);
    }
    // two sets: a and b in the first, out in the second
    full.u8(11).u8(11);
    full.u8(12).u8(4).u8(3).u8(0);
    full.u8(12).u8(4).u8(4).u8(1);
    full.u8(12).u8(3).u8(5).u8(2);
    // execute, then schedule the same execution asynchronously
    full.u8(14).u8(3).u8(4).u8(3).u8(1);
    full.u8(14).u8(3).u8(4).u8(3).u8(0);
    // async write and read of 16 bytes of the first tensor; tracker, list, completion
    full.u8(16).u8(3).u8(0).u8(2).u16(4).u8(2).u16(0).u8(0);
    full.u8(17).u8(0).u8(3).u8(0).u8(0);
    // tensor info (freed twice) and memory statistics
    full.u8(18).u8(3).u8(0);
    let mut hostile = Out::default();
    for k in 0..20u8 {
        hostile
            .u8(k)
            .u8(k.wrapping_mul(37))
            .u64(0xDEAD_BEEF)
            .u8(k ^ 0x55)
            .u32(4096);
    }
    vec![
        ("capi-inference".into(), full.0),
        ("capi-hostile".into(), hostile.0),
        ("capi-empty".into(), Vec::new()),
    ]
}

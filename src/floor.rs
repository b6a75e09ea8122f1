//! The physical floor of simulating an execution on this host: the arithmetic any exact
//! simulator must do (the PE array's multiply-accumulates, at the host's own f32 sgemm rate)
//! plus the bytes any simulator must move (the DMA bytes, at the host's memcpy rate), both
//! rates measured now. Benchmarks and tests print a simulation's host time next to it.

use std::hint::black_box;
use std::time::Instant;

/// The host's rates: f32 multiply-accumulates per second and bytes copied per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostRates {
    /// f32 MAC/s through the simulator's matmul kernel on a full PE tile.
    pub sgemm_macs_per_sec: f64,
    /// Bytes/s of 1 MiB memcpys.
    pub memcpy_bytes_per_sec: f64,
}

impl HostRates {
    /// Measures both rates (a few tens of milliseconds).
    pub fn measure() -> HostRates {
        HostRates {
            sgemm_macs_per_sec: host_sgemm_macs_per_sec(),
            memcpy_bytes_per_sec: host_memcpy_bytes_per_sec(),
        }
    }

    /// Seconds the floor of an execution with `pe_macs` multiply-accumulates and `dma_bytes`
    /// DMA bytes takes at these rates.
    pub fn floor_secs(&self, pe_macs: u64, dma_bytes: u64) -> f64 {
        pe_macs as f64 / self.sgemm_macs_per_sec + dma_bytes as f64 / self.memcpy_bytes_per_sec
    }
}

/// The host's f32 multiply-accumulate rate through the simulator's matmul kernel
/// (`matrixmultiply::sgemm`, single-threaded, called with the operand layout of
/// `nrt_sim`'s `gemm::stationary_t_times_moving`) on a full PE tile: K = M = 128 and one
/// PSUM bank of fp32 columns, N = 512. The best of several timed batches, in MAC/s.
pub fn host_sgemm_macs_per_sec() -> f64 {
    let (k, m, n) = (128usize, 128usize, 512usize);
    let s: Vec<f32> = (0..k * m).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
    let x: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
    let mut out = vec![0f32; m * n];
    let mut run = |reps: u32| {
        let t = Instant::now();
        for _ in 0..reps {
            // SAFETY: s is k × m (A = sᵀ, row stride 1, column stride m), x is k × n and out
            // m × n, both row-major; the slices hold exactly those elements and out aliases
            // neither input.
            unsafe {
                matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    black_box(s.as_ptr()),
                    1,
                    m as isize,
                    black_box(x.as_ptr()),
                    n as isize,
                    1,
                    0.0,
                    out.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            black_box(&mut out);
        }
        t.elapsed()
    };
    run(20);
    let reps = 100;
    let best = (0..5).map(|_| run(reps)).min().unwrap_or_default();
    (k * m * n) as f64 * f64::from(reps) / best.as_secs_f64().max(1e-9)
}

/// The host's memcpy rate on 1 MiB copies between two buffers (in cache as far as the host's
/// caches reach, as the simulator's working set of one execution is): the best of several
/// timed batches, in bytes/s.
pub fn host_memcpy_bytes_per_sec() -> f64 {
    let len = 1 << 20;
    let src: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let mut dst = vec![0u8; len];
    let mut run = |reps: u32| {
        let t = Instant::now();
        for _ in 0..reps {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        }
        t.elapsed()
    };
    run(20);
    let reps = 200;
    let best = (0..5).map(|_| run(reps)).min().unwrap_or_default();
    len as f64 * f64::from(reps) / best.as_secs_f64().max(1e-9)
}

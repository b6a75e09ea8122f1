//! A libnrt session (`nrt_runtime::nrt`) over a fresh simulator behind its own lifecycle
//! guard, served by a test front end that keeps what the session logs and the legacy-async
//! completions it hands over — the harness of the `nrt_*` test modules.

use std::sync::{Arc, Mutex};

use nrt_hal::{Hal, HalLayer, Target};
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::nrt::legacy::Completion;
use nrt_runtime::nrt::log::Log;
use nrt_runtime::nrt::session::{Front, Session};
use nrt_runtime::nrt::trace::{FetchOptions, SysTraceConfig};
use nrt_runtime::nrt::Nrt;
use nrt_runtime::tensor::{Placement, TensorSet, TensorUsage};
use nrt_runtime::{ModelId, Result, Runtime};
use nrt_sim::{Sim, SimConfig};

/// What a legacy-async completion told the front end: (model, visible core, sequence id,
/// status code).
pub type Done = (u32, u32, u64, u32);

/// The test front end.
pub struct TestFront {
    nrt: &'static Nrt<Session>,
    /// Every line the session logged, `ERROR ` or `INFO ` first.
    pub lines: Mutex<Vec<String>>,
    /// Every legacy-async completion, in the order handed over.
    pub done: Mutex<Vec<Done>>,
}

impl Log for TestFront {
    fn error(&self, msg: &str) {
        self.lines.lock().unwrap().push(format!("ERROR {msg}"));
    }
    fn info(&self, msg: &str) {
        self.lines.lock().unwrap().push(format!("INFO {msg}"));
    }
}

impl Front for TestFront {
    fn try_with(&self, f: &mut dyn FnMut(&Runtime, &Session)) -> Option<Result<()>> {
        self.nrt.try_with_session(|rt, s| {
            f(rt, s);
            Ok(())
        })
    }
    fn with(&self, f: &mut dyn FnMut(&Runtime, &Session)) -> Result<()> {
        self.nrt.with_session(|rt, s| {
            f(rt, s);
            Ok(())
        })
    }
    fn legacy_completed(&self, c: &Completion) {
        let status = c.result.as_ref().map_or_else(|e| e.status.code(), |_| 0);
        self.done
            .lock()
            .unwrap()
            .push((c.model, c.visible, c.req.seq_id, status));
    }
}

/// The simulator with its profiling capability hidden, as a backend without one (the driver)
/// presents itself.
pub struct NoProfiler(pub Arc<Sim>);

impl HalLayer for NoProfiler {
    type Inner = Sim;
    fn inner(&self) -> &Sim {
        &self.0
    }
    fn profiler(&self) -> Option<&dyn nrt_hal::profile::Profiler> {
        None
    }
}

/// An open session.
pub struct Harness {
    /// Its guard.
    pub nrt: &'static Nrt<Session>,
    /// Its front end.
    pub front: Arc<TestFront>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.nrt.close();
    }
}

/// A session over `device` with configuration `cfg`, every logical core visible.
pub fn open_on(device: Arc<dyn Hal>, cfg: RuntimeConfig) -> Harness {
    let nrt: &'static Nrt<Session> = Box::leak(Box::new(Nrt::new()));
    let front = Arc::new(TestFront {
        nrt,
        lines: Mutex::new(Vec::new()),
        done: Mutex::new(Vec::new()),
    });
    let f: Arc<dyn Front> = front.clone();
    nrt.init_with(device, cfg, |rt| {
        Ok(Session::new(rt, 0..rt.vcore_count(), f))
    })
    .unwrap();
    Harness { nrt, front }
}

/// A session over a fresh trn1 simulator.
pub fn open(cfg: RuntimeConfig) -> Harness {
    open_on(Arc::new(Sim::new(SimConfig::new(Target::Trn1))), cfg)
}

/// The zoo's `add` NEFF for trn1.
pub fn add_neff() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/neffs/add.trn1.neff"
    );
    std::fs::read(path).expect("the committed add fixture")
}

impl Harness {
    /// Runs `f` on the open runtime and session.
    pub fn with<T>(&self, f: impl FnOnce(&Runtime, &Session) -> Result<T>) -> Result<T> {
        self.nrt.with_session(f)
    }

    /// Loads the `add` model on visible core 0: (model, the runtime's logical core).
    pub fn load_add(&self) -> (ModelId, u32) {
        self.with(|rt, s| s.load(rt, &add_neff(), 0)).unwrap()
    }

    /// Device input and output sets of model `id` on logical core `vnc`, inputs seeded.
    pub fn io(&self, id: ModelId, vnc: u32) -> (TensorSet, TensorSet) {
        self.with(|rt, _| {
            let mut ins = TensorSet::new();
            let mut outs = TensorSet::new();
            for t in rt.model_tensor_info(id)? {
                let dev = rt.tensor_allocate(Placement::Device, vnc, t.size, &t.name)?;
                match t.usage {
                    TensorUsage::Input => {
                        let data =
                            nrt_sim::values::seeded_input(1, &t.name, t.dtype, t.size as usize);
                        dev.write(0, &data)?;
                        ins.add(&t.name, dev);
                    }
                    TensorUsage::Output => outs.add(&t.name, dev),
                }
            }
            Ok((ins, outs))
        })
        .unwrap()
    }

    /// Starts the session's system trace (every core, every event type).
    pub fn start_trace(&self) {
        self.with(|_, s| {
            s.trace.start(SysTraceConfig::default());
            Ok(())
        })
        .unwrap();
    }

    /// The trace's events so far, as JSON.
    pub fn fetch_trace(&self) -> String {
        self.with(|_, s| Ok(s.trace.fetch(&FetchOptions::default())))
            .unwrap()
    }

    /// Executes model `id` on logical core `vnc` `repeat` times (1: `nrt_execute`).
    pub fn execute(
        &self,
        (id, vnc): (ModelId, u32),
        (ins, outs): (&TensorSet, &TensorSet),
        repeat: u32,
    ) -> Result<Option<nrt_runtime::exec::ExecReport>> {
        self.with(|rt, s| s.execute(rt, (id, vnc), ins, outs, repeat))
    }

    /// The lines logged so far.
    pub fn lines(&self) -> Vec<String> {
        self.front.lines.lock().unwrap().clone()
    }
}

/// A fresh directory under the system's temporary directory.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "nrt-runtime-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

//! The patch records of a loaded model's engine streams: where S5 translation
//! (`crate::load::translate`, docs/runtime.md §2.7) made a NEFF instruction grow into several
//! device slots or vanish, kept with the per-core model so that an error report can name the
//! NEFF instruction an engine stopped on ([`PatchTable::device_to_neff`]).

/// What a patch record says happened at one NEFF instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// The instruction expanded into `1 + extra` device slots.
    Insert {
        /// Slots added beyond the first.
        extra: u32,
    },
    /// The instruction vanished.
    Delete,
}

/// One patch record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patch {
    /// Index of the instruction in the NEFF stream.
    pub neff_ip: u32,
    /// Index of its first device slot (for a delete: where it would have been).
    pub device_ip: u32,
    /// What happened.
    pub kind: PatchKind,
}

/// The patch records of one engine stream, in stream order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchTable {
    /// Records.
    pub patches: Vec<Patch>,
}

impl PatchTable {
    /// The NEFF instruction index that device slot `device_ip` came from.
    pub fn device_to_neff(&self, device_ip: u32) -> u32 {
        let mut delta: i64 = 0; // device_ip - neff_ip so far
        for p in &self.patches {
            if p.device_ip > device_ip {
                break;
            }
            match p.kind {
                PatchKind::Insert { extra } => {
                    if device_ip <= p.device_ip + extra {
                        return p.neff_ip;
                    }
                    delta += extra as i64;
                }
                PatchKind::Delete => delta -= 1,
            }
        }
        (device_ip as i64 - delta) as u32
    }
}

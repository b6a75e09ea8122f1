//! `NRT_STATUS`: the public status codes of `nrt_status.h` (docs/c-api.md §2),
//! with their exact numeric values and `nrt_get_status_as_str`-style names.

use core::fmt;

/// A runtime status code. Discriminants are the real `NRT_STATUS` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum NrtStatus {
    /// 0: ok.
    Success = 0,
    /// 1: unspecified failure.
    Failure = 1,
    /// 2: invalid NEFF, instruction, DMA descriptor, input name or size …
    Invalid = 2,
    /// 3: invalid handle.
    InvalidHandle = 3,
    /// 4: resource allocation failed.
    Resource = 4,
    /// 5: timed out.
    Timeout = 5,
    /// 6: hardware failure.
    HwError = 6,
    /// 7: the execution input queue is full.
    QueueFull = 7,
    /// 9: the NEFF needs more cores than are available.
    LoadNotEnoughNc = 9,
    /// 10: unsupported NEFF version.
    UnsupportedNeffVersion = 10,
    /// 11: host allocation failed (deprecated).
    FailHostMemAlloc = 11,
    /// 13: called before `nrt_init`.
    Uninitialized = 13,
    /// 14: called after `nrt_close`.
    Closed = 14,
    /// 15: the queue had no data.
    QueueEmpty = 15,
    /// 101: execution unit unrecoverable; reset needed.
    ExecUnitUnrecoverable = 101,
    /// 1002: invalid input to execute.
    ExecBadInput = 1002,
    /// 1003: completed, with NaNs produced.
    ExecCompletedWithNumErr = 1003,
    /// 1004: completed with other errors.
    ExecCompletedWithErr = 1004,
    /// 1005: core locked by another model or process.
    ExecNcBusy = 1005,
    /// 1006: out-of-bounds indirect copy.
    ExecOob = 1006,
    /// 1100: collective still pending.
    CollPending = 1100,
    /// 1200: stuck in collectives.
    ExecHwErrCollectives = 1200,
    /// 1201: unrepairable HBM uncorrectable error.
    ExecHwErrHbmUe = 1201,
    /// 1202: on-chip memory parity error.
    ExecHwErrNcUe = 1202,
    /// 1203: DMA engine unrecoverable.
    ExecHwErrDmaAbort = 1203,
    /// 1204: software notification queue overflow.
    ExecSwNqOverflow = 1204,
    /// 1205: repairable HBM uncorrectable error.
    ExecHwErrRepairableHbmUe = 1205,
    /// 1206: EFA network proxy failure.
    NetworkProxyFailure = 1206,
}

impl NrtStatus {
    /// Every status.
    pub const ALL: [NrtStatus; 28] = [
        NrtStatus::Success,
        NrtStatus::Failure,
        NrtStatus::Invalid,
        NrtStatus::InvalidHandle,
        NrtStatus::Resource,
        NrtStatus::Timeout,
        NrtStatus::HwError,
        NrtStatus::QueueFull,
        NrtStatus::LoadNotEnoughNc,
        NrtStatus::UnsupportedNeffVersion,
        NrtStatus::FailHostMemAlloc,
        NrtStatus::Uninitialized,
        NrtStatus::Closed,
        NrtStatus::QueueEmpty,
        NrtStatus::ExecUnitUnrecoverable,
        NrtStatus::ExecBadInput,
        NrtStatus::ExecCompletedWithNumErr,
        NrtStatus::ExecCompletedWithErr,
        NrtStatus::ExecNcBusy,
        NrtStatus::ExecOob,
        NrtStatus::CollPending,
        NrtStatus::ExecHwErrCollectives,
        NrtStatus::ExecHwErrHbmUe,
        NrtStatus::ExecHwErrNcUe,
        NrtStatus::ExecHwErrDmaAbort,
        NrtStatus::ExecSwNqOverflow,
        NrtStatus::ExecHwErrRepairableHbmUe,
        NrtStatus::NetworkProxyFailure,
    ];

    /// The numeric code.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The status with numeric code `code`.
    pub fn from_code(code: u32) -> Option<NrtStatus> {
        Self::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The C enumerator name, as `nrt_get_status_as_str` reports it.
    pub const fn name(self) -> &'static str {
        match self {
            NrtStatus::Success => "NRT_SUCCESS",
            NrtStatus::Failure => "NRT_FAILURE",
            NrtStatus::Invalid => "NRT_INVALID",
            NrtStatus::InvalidHandle => "NRT_INVALID_HANDLE",
            NrtStatus::Resource => "NRT_RESOURCE",
            NrtStatus::Timeout => "NRT_TIMEOUT",
            NrtStatus::HwError => "NRT_HW_ERROR",
            NrtStatus::QueueFull => "NRT_QUEUE_FULL",
            NrtStatus::LoadNotEnoughNc => "NRT_LOAD_NOT_ENOUGH_NC",
            NrtStatus::UnsupportedNeffVersion => "NRT_UNSUPPORTED_NEFF_VERSION",
            NrtStatus::FailHostMemAlloc => "NRT_FAIL_HOST_MEM_ALLOC",
            NrtStatus::Uninitialized => "NRT_UNINITIALIZED",
            NrtStatus::Closed => "NRT_CLOSED",
            NrtStatus::QueueEmpty => "NRT_QUEUE_EMPTY",
            NrtStatus::ExecUnitUnrecoverable => "NRT_EXEC_UNIT_UNRECOVERABLE",
            NrtStatus::ExecBadInput => "NRT_EXEC_BAD_INPUT",
            NrtStatus::ExecCompletedWithNumErr => "NRT_EXEC_COMPLETED_WITH_NUM_ERR",
            NrtStatus::ExecCompletedWithErr => "NRT_EXEC_COMPLETED_WITH_ERR",
            NrtStatus::ExecNcBusy => "NRT_EXEC_NC_BUSY",
            NrtStatus::ExecOob => "NRT_EXEC_OOB",
            NrtStatus::CollPending => "NRT_COLL_PENDING",
            NrtStatus::ExecHwErrCollectives => "NRT_EXEC_HW_ERR_COLLECTIVES",
            NrtStatus::ExecHwErrHbmUe => "NRT_EXEC_HW_ERR_HBM_UE",
            NrtStatus::ExecHwErrNcUe => "NRT_EXEC_HW_ERR_NC_UE",
            NrtStatus::ExecHwErrDmaAbort => "NRT_EXEC_HW_ERR_DMA_ABORT",
            NrtStatus::ExecSwNqOverflow => "NRT_EXEC_SW_NQ_OVERFLOW",
            NrtStatus::ExecHwErrRepairableHbmUe => "NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE",
            NrtStatus::NetworkProxyFailure => "NRT_NETWORK_PROXY_FAILURE",
        }
    }
}

impl fmt::Display for NrtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_nrt_status_h() {
        let want: [(NrtStatus, u32); 28] = [
            (NrtStatus::Success, 0),
            (NrtStatus::Failure, 1),
            (NrtStatus::Invalid, 2),
            (NrtStatus::InvalidHandle, 3),
            (NrtStatus::Resource, 4),
            (NrtStatus::Timeout, 5),
            (NrtStatus::HwError, 6),
            (NrtStatus::QueueFull, 7),
            (NrtStatus::LoadNotEnoughNc, 9),
            (NrtStatus::UnsupportedNeffVersion, 10),
            (NrtStatus::FailHostMemAlloc, 11),
            (NrtStatus::Uninitialized, 13),
            (NrtStatus::Closed, 14),
            (NrtStatus::QueueEmpty, 15),
            (NrtStatus::ExecUnitUnrecoverable, 101),
            (NrtStatus::ExecBadInput, 1002),
            (NrtStatus::ExecCompletedWithNumErr, 1003),
            (NrtStatus::ExecCompletedWithErr, 1004),
            (NrtStatus::ExecNcBusy, 1005),
            (NrtStatus::ExecOob, 1006),
            (NrtStatus::CollPending, 1100),
            (NrtStatus::ExecHwErrCollectives, 1200),
            (NrtStatus::ExecHwErrHbmUe, 1201),
            (NrtStatus::ExecHwErrNcUe, 1202),
            (NrtStatus::ExecHwErrDmaAbort, 1203),
            (NrtStatus::ExecSwNqOverflow, 1204),
            (NrtStatus::ExecHwErrRepairableHbmUe, 1205),
            (NrtStatus::NetworkProxyFailure, 1206),
        ];
        for (s, c) in want {
            assert_eq!(s.code(), c);
            assert_eq!(NrtStatus::from_code(c), Some(s));
        }
        assert_eq!(NrtStatus::from_code(8), None);
        assert_eq!(NrtStatus::Invalid.to_string(), "NRT_INVALID(2)");
    }
}

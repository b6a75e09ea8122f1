//! The installed headers, embedded so an installed `nrt-emu` binary can lay them out without
//! the source tree: (path under the include directory, text).

/// Every header, by its path under `include/`.
pub const HEADERS: &[(&str, &str)] = &[
    ("nrt/nrt.h", include_str!("../include/nrt/nrt.h")),
    (
        "nrt/nrt_status.h",
        include_str!("../include/nrt/nrt_status.h"),
    ),
    (
        "nrt/nrt_version.h",
        include_str!("../include/nrt/nrt_version.h"),
    ),
    (
        "nrt/nrt_experimental.h",
        include_str!("../include/nrt/nrt_experimental.h"),
    ),
    (
        "nrt/nrt_async.h",
        include_str!("../include/nrt/nrt_async.h"),
    ),
    (
        "nrt/nrt_profile.h",
        include_str!("../include/nrt/nrt_profile.h"),
    ),
    (
        "nrt/nrt_sys_trace.h",
        include_str!("../include/nrt/nrt_sys_trace.h"),
    ),
    (
        "nrt/nrt_async_sendrecv.h",
        include_str!("../include/nrt/nrt_async_sendrecv.h"),
    ),
    (
        "nrt/ndebug_stream.h",
        include_str!("../include/nrt/ndebug_stream.h"),
    ),
    ("nrt/nec.h", include_str!("../include/nrt/nec.h")),
    (
        "ndl/neuron_driver_shared_tensor_batch_op.h",
        include_str!("../include/ndl/neuron_driver_shared_tensor_batch_op.h"),
    ),
];

// The headers from C++17: every header together, the enums as C++ sees them, and a short
// session through the library (init, a virtual tensor, close) with nullptr arguments refused.
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "ndl/neuron_driver_shared_tensor_batch_op.h"
#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_status.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/ndebug_stream.h"
#include "nrt/nec.h"

static_assert(sizeof(nrt_tensor_info_t) == 296, "nrt_tensor_info_t");
static_assert(sizeof(nrta_error_t) == 16, "nrta_error_t");
static_assert(std::is_same<nrt_tensor_set_t, void>::value, "nrt_tensor_set_t is void");

int main() {
    int failed = 0;
    auto check = [&](bool ok, const char *what) {
        if (!ok) {
            std::printf("FAILED %s\n", what);
            failed++;
        }
    };
    check(nrt_init(NRT_FRAMEWORK_TYPE_PYTORCH, "2.1", "") == NRT_SUCCESS, "init");
    nrt_tensor_t *t = nullptr;
    check(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 16, "cxx", &t) == NRT_SUCCESS, "allocate");
    const char hello[16] = "hello from c++";
    char back[16] = {};
    check(nrt_tensor_write(t, hello, 0, sizeof hello) == NRT_SUCCESS, "write");
    check(nrt_tensor_read(t, back, 0, sizeof back) == NRT_SUCCESS && std::memcmp(hello, back, 16) == 0, "read");
    check(nrt_tensor_read(t, nullptr, 0, 4) == NRT_INVALID, "read nullptr");
    check(nrt_get_model_tensor_info(nullptr, nullptr) == NRT_INVALID, "info nullptr");
    int fd = -1;
    check(nrt_debug_client_connect(0, &fd) == NRT_FAILURE && fd == -1, "no debug stream");
    check(nrt_async_sendrecv_init(0) == NRT_FAILURE, "no send/recv");
    nec_version_info_t nv;
    check(nec_get_version_info(&nv) == NRT_FAILURE, "no libnccom");
    check(nec_get_device_count(nullptr, 0) == -1, "nec nullptr");
    nrt_tensor_free(&t);
    check(t == nullptr, "free clears");
    nrt_close();
    std::printf("c++ %s\n", failed ? "failed" : "ok");
    return failed ? 1 : 0;
}

#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each with libFuzzer, from the
# generated seeds, the committed regression inputs and the growing corpus in fuzz/corpus/.
# Fails on the first crash, hang (-timeout), or over-limit allocation; libFuzzer leaves the
# input in fuzz/artifacts/<target>/.
#
#   bash fuzz/run.sh SECONDS [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). Extra
# libFuzzer flags can be passed in FUZZ_FLAGS (e.g. FUZZ_FLAGS=-jobs=2).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(neff_parse neff_load isa_decode sim_dma kabi capi)
fi

# ASan's quarantine re-poisons every freed block; each simulator owns ~50 MiB of on-chip memory
# (SBUF/PSUM), so with the default 256 MiB quarantine creating and dropping one simulator per
# input costs ~10x the input itself. A 16 MiB quarantine keeps use-after-free detection for
# ordinary blocks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"

# Seeds are generated (zoo, malformed corpus, instruction streams, hand-made programs), not
# committed: stable build of the small generator.
# The test profile reuses what `cargo test --workspace` built.
cargo run --quiet --profile test -p nrt-fuzz --bin nrt-fuzz-seeds -- fuzz/seeds

for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  dirs=("fuzz/corpus/$t" "fuzz/seeds/$t")
  [ -d "fuzz/regressions/$t" ] && dirs+=("fuzz/regressions/$t")
  echo "== fuzz $t (${secs}s)"
  # shellcheck disable=SC2086
  cargo +nightly fuzz run --fuzz-dir fuzz "$t" "${dirs[@]}" -- \
    -max_total_time="$secs" -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=10 \
    -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 ${FUZZ_FLAGS:-}
done

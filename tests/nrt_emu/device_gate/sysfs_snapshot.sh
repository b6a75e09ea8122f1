#!/bin/sh
# Prints, one "core<K> <name> <value>" line each, the sysfs values of Neuron device $1
# (default 0) that move as models load and execute: device memory in use (all of it, and model
# code), executions and successful ones, and flops — the way a monitoring script on a device
# host reads them. Used by the device-gated tests (docs/driver.md §13.3).
set -e
d=/sys/class/neuron_device/neuron${1:-0}
n=$(cat "$d/core_count")
i=0
while [ "$i" -lt "$n" ]; do
    s="$d/neuron_core$i/stats"
    echo "core$i device_mem $(cat "$s/memory_usage/device_mem/total")"
    echo "core$i model_code $(cat "$s/memory_usage/device_mem/model_code/total")"
    echo "core$i inference_count $(cat "$s/other_info/inference_count/total")"
    echo "core$i success $(cat "$s/status/success/total")"
    echo "core$i flop_count $(cat "$s/other_info/flop_count/total")"
    i=$((i + 1))
done

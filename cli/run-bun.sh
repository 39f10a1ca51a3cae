#!/bin/sh
# Runs Bun with the process settings every service runs with (the npm scripts start each service, the whole stack, the
# demo, the chaos run and the benchmarks through this). A setting already in the environment wins.
#
# MIMALLOC_PURGE_DELAY=-1: Bun's allocator (mimalloc) keeps the memory it has freed for reuse instead of handing it
# back to the operating system on a timer. The services allocate and drop large buffers all the time (a page of
# payloads, a StreamEvents message, a claim's rows); by default each one came back from the kernel as fresh pages, and
# the page faults and zeroing of that churn cost more CPU than the work itself: per StreamEvents event 24-26 µs of the
# server's CPU against 8 with this setting, per queue delivery 83-118 µs against 50-73, per 50-event page of
# GET /v1/events 1,202-1,533 µs against 776-1,022 (README "Benchmarks", *Memory*). The price is a resident size that
# stays at its high-water mark (a StreamEvents bench process levelled off at ~420 MB against ~240 MB);
# MIMALLOC_PURGE_DELAY=100 (Bun's default, in ms) trades the CPU back for memory.
: "${MIMALLOC_PURGE_DELAY:=-1}"
export MIMALLOC_PURGE_DELAY
exec bun "$@"

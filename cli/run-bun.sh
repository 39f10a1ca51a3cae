#!/bin/sh
# Runs Bun with the process settings every service runs with (the npm scripts start each service, the whole stack, the
# demo, the chaos run and the benchmarks through this). A setting already in the environment wins.
#
# MIMALLOC_PURGE_DELAY=-1: Bun's allocator keeps the memory it has freed for reuse instead of handing it back to the
# kernel, whose fresh pages cost the services more CPU than their work (docs/adr/0005-allocator-keeps-freed-memory.md);
# MIMALLOC_PURGE_DELAY=100 (Bun's default, in ms) trades the CPU back for memory.
: "${MIMALLOC_PURGE_DELAY:=-1}"
export MIMALLOC_PURGE_DELAY
exec bun "$@"

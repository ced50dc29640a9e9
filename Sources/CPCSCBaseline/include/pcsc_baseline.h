// The benchmark's baseline: a plain C loop of SCardTransmit over one reader, as a C program written
// directly against pcsc-lite would do it. Used only by secbridge-bench, to compare the Swift layer's
// APDU rate with C's on the same reader and pcscd.
#ifndef PCSC_BASELINE_H
#define PCSC_BASELINE_H

#include <stddef.h>
#include <stdint.h>

/// Connects (shared, T=0|T=1) to `reader`, sends `apdu` `count` times, disconnects.
/// Returns 0 on success, or the failing PC/SC result code (as a 32-bit value).
uint32_t pcsc_baseline_transmit_loop(const char *reader, const uint8_t *apdu, size_t apdu_length, int count);

/// The same, with only the SCardTransmit loop timed: wall time (CLOCK_MONOTONIC) in
/// `loop_nanoseconds` and the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in
/// `cpu_nanoseconds`. Context set-up, connect and disconnect stay outside both, as in the Swift
/// loop it is compared with.
uint32_t pcsc_baseline_transmit_loop_timed(const char *reader, const uint8_t *apdu, size_t apdu_length, int count,
                                           uint64_t *loop_nanoseconds, uint64_t *cpu_nanoseconds);

#endif

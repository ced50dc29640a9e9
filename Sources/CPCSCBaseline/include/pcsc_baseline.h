// The benchmark's baseline: a plain C loop of SCardTransmit over one reader, as a C program written
// directly against pcsc-lite would do it. Used only by secbridge-bench, to compare the Swift layer's
// APDU rate, CPU time and instructions with C's on the same reader and pcscd.
#ifndef PCSC_BASELINE_H
#define PCSC_BASELINE_H

#include <stddef.h>
#include <stdint.h>

/// An established context and a shared connection to one reader's card.
typedef struct pcsc_baseline_connection {
    uintptr_t context;
    uintptr_t card;
    uint32_t active_protocol;
} pcsc_baseline_connection;

/// SCardEstablishContext (system scope) and SCardConnect (shared, T=0|T=1) to `reader`.
/// Returns 0 on success, or the failing PC/SC result code (as a 32-bit value).
uint32_t pcsc_baseline_open(const char *reader, pcsc_baseline_connection *connection);

/// Sends `apdu` `count` times through SCardTransmit on an open connection. Only this loop is
/// timed: wall time (CLOCK_MONOTONIC) in `loop_nanoseconds` and the calling thread's CPU time
/// (CLOCK_THREAD_CPUTIME_ID) in `cpu_nanoseconds`. Returns 0, or the first failing result code.
uint32_t pcsc_baseline_transmit_loop(const pcsc_baseline_connection *connection, const uint8_t *apdu,
                                     size_t apdu_length, int count, uint64_t *loop_nanoseconds,
                                     uint64_t *cpu_nanoseconds);

/// SCardDisconnect (leave the card) and SCardReleaseContext.
void pcsc_baseline_close(const pcsc_baseline_connection *connection);

#endif

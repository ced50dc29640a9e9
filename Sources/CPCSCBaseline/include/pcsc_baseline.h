// The benchmark's baseline: a plain C loop of SCardTransmit over one reader, as a C program written
// directly against pcsc-lite would do it. Used only by secbridge-bench, to compare the Swift layer's
// APDU rate, CPU time and instructions with C's on the same reader and pcscd, and a card on vpcd's
// protocol to compare `secbridge serve` with.
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

/// The peer card for vpcd (vpcd_card.c): connects to vpcd on 127.0.0.1 `port` with TCP_NODELAY.
/// Returns the socket, or minus the errno of the failure.
int vpcd_card_connect(uint16_t port);

/// Answers vpcd on `fd` until it closes or fails (shutdown(2) `fd` from another thread to stop):
/// an ATR request with `3B 80 80 01 01`, every C-APDU with `90 00`, each answer one send. With
/// `quick_ack`, TCP_QUICKACK is set again before every recv (where the system has it). Closes `fd`
/// and returns the count of C-APDUs answered.
uint64_t vpcd_card_serve(int fd, int quick_ack);

#endif

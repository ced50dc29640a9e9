#include "pcsc_baseline.h"
#include <time.h>
#include <winscard.h>
#include <reader.h>

static uint64_t nanoseconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint32_t pcsc_baseline_open(const char *reader, pcsc_baseline_connection *connection) {
    SCARDCONTEXT context;
    SCARDHANDLE card;
    DWORD active;
    LONG rv = SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &context);
    if (rv != SCARD_S_SUCCESS) return (uint32_t)rv;
    rv = SCardConnect(context, reader, SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1, &card, &active);
    if (rv != SCARD_S_SUCCESS) { SCardReleaseContext(context); return (uint32_t)rv; }
    connection->context = (uintptr_t)context;
    connection->card = (uintptr_t)card;
    connection->active_protocol = (uint32_t)active;
    return 0;
}

uint32_t pcsc_baseline_transmit_loop(const pcsc_baseline_connection *connection, const uint8_t *apdu,
                                     size_t apdu_length, int count, uint64_t *loop_nanoseconds,
                                     uint64_t *cpu_nanoseconds) {
    SCARDHANDLE card = (SCARDHANDLE)connection->card;
    const SCARD_IO_REQUEST *pci = connection->active_protocol == SCARD_PROTOCOL_T0 ? SCARD_PCI_T0 : SCARD_PCI_T1;
    static BYTE response[MAX_BUFFER_SIZE_EXTENDED];
    LONG rv = SCARD_S_SUCCESS;
    uint64_t start = nanoseconds(CLOCK_MONOTONIC), cpu_start = nanoseconds(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < count && rv == SCARD_S_SUCCESS; i++) {
        DWORD length = sizeof(response);
        rv = SCardTransmit(card, pci, apdu, (DWORD)apdu_length, NULL, response, &length);
    }
    *cpu_nanoseconds = nanoseconds(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    *loop_nanoseconds = nanoseconds(CLOCK_MONOTONIC) - start;
    return (uint32_t)rv;
}

void pcsc_baseline_close(const pcsc_baseline_connection *connection) {
    SCardDisconnect((SCARDHANDLE)connection->card, SCARD_LEAVE_CARD);
    SCardReleaseContext((SCARDCONTEXT)connection->context);
}

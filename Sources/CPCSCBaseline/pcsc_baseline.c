#include "pcsc_baseline.h"
#include <time.h>
#include <winscard.h>
#include <reader.h>

uint32_t pcsc_baseline_transmit_loop(const char *reader, const uint8_t *apdu, size_t apdu_length, int count) {
    uint64_t wall, cpu;
    return pcsc_baseline_transmit_loop_timed(reader, apdu, apdu_length, count, &wall, &cpu);
}

static uint64_t nanoseconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint32_t pcsc_baseline_transmit_loop_timed(const char *reader, const uint8_t *apdu, size_t apdu_length, int count,
                                           uint64_t *loop_nanoseconds, uint64_t *cpu_nanoseconds) {
    SCARDCONTEXT context;
    SCARDHANDLE card;
    DWORD active;
    LONG rv = SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &context);
    if (rv != SCARD_S_SUCCESS) return (uint32_t)rv;
    rv = SCardConnect(context, reader, SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1, &card, &active);
    if (rv != SCARD_S_SUCCESS) { SCardReleaseContext(context); return (uint32_t)rv; }
    const SCARD_IO_REQUEST *pci = active == SCARD_PROTOCOL_T0 ? SCARD_PCI_T0 : SCARD_PCI_T1;
    static BYTE response[MAX_BUFFER_SIZE_EXTENDED];
    uint64_t start = nanoseconds(CLOCK_MONOTONIC), cpu_start = nanoseconds(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < count && rv == SCARD_S_SUCCESS; i++) {
        DWORD length = sizeof(response);
        rv = SCardTransmit(card, pci, apdu, (DWORD)apdu_length, NULL, response, &length);
    }
    *cpu_nanoseconds = nanoseconds(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    *loop_nanoseconds = nanoseconds(CLOCK_MONOTONIC) - start;
    SCardDisconnect(card, SCARD_LEAVE_CARD);
    SCardReleaseContext(context);
    return (uint32_t)rv;
}

#include "pcsc_baseline.h"
#include <winscard.h>
#include <reader.h>

uint32_t pcsc_baseline_transmit_loop(const char *reader, const uint8_t *apdu, size_t apdu_length, int count) {
    SCARDCONTEXT context;
    SCARDHANDLE card;
    DWORD active;
    LONG rv = SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &context);
    if (rv != SCARD_S_SUCCESS) return (uint32_t)rv;
    rv = SCardConnect(context, reader, SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1, &card, &active);
    if (rv != SCARD_S_SUCCESS) { SCardReleaseContext(context); return (uint32_t)rv; }
    const SCARD_IO_REQUEST *pci = active == SCARD_PROTOCOL_T0 ? SCARD_PCI_T0 : SCARD_PCI_T1;
    static BYTE response[MAX_BUFFER_SIZE_EXTENDED];
    for (int i = 0; i < count && rv == SCARD_S_SUCCESS; i++) {
        DWORD length = sizeof(response);
        rv = SCardTransmit(card, pci, apdu, (DWORD)apdu_length, NULL, response, &length);
    }
    SCardDisconnect(card, SCARD_LEAVE_CARD);
    SCardReleaseContext(context);
    return (uint32_t)rv;
}

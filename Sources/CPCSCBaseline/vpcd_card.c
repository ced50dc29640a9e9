// The benchmark's peer card for vpcd: the least a card can do on vpcd's protocol
// (docs/vpcd-protocol.md §2), so `secbridge serve` can be compared with a C card on the same stock
// vpcd. It answers an ATR request with 3B 80 80 01 01 and every C-APDU with 90 00.
#include "pcsc_baseline.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int vpcd_card_connect(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int read_all(int fd, uint8_t *buffer, size_t count, int quick_ack) {
    size_t filled = 0;
    while (filled < count) {
#ifdef TCP_QUICKACK
        if (quick_ack) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
        }
#endif
        ssize_t n = recv(fd, buffer + filled, count - filled, 0);
        if (n == 0) return -1;
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        filled += (size_t)n;
    }
    return 0;
}

static int send_all(int fd, const uint8_t *bytes, size_t count) {
    size_t sent = 0;
    while (sent < count) {
        ssize_t n = send(fd, bytes + sent, count - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        sent += (size_t)n;
    }
    return 0;
}

uint64_t vpcd_card_serve(int fd, int quick_ack) {
    static const uint8_t atr[] = {0x00, 0x05, 0x3B, 0x80, 0x80, 0x01, 0x01};
    static const uint8_t ok[] = {0x00, 0x02, 0x90, 0x00};
    static uint8_t payload[65535];
    uint64_t commands = 0;
    for (;;) {
        uint8_t header[2];
        if (read_all(fd, header, 2, quick_ack) != 0) break;
        size_t length = (size_t)header[0] << 8 | header[1];
        if (length == 0 || read_all(fd, payload, length, quick_ack) != 0) break;
        if (length == 1) {
            if (payload[0] == 0x04 && send_all(fd, atr, sizeof atr) != 0) break;
            continue;
        }
        if (send_all(fd, ok, sizeof ok) != 0) break;
        commands++;
    }
    close(fd);
    return commands;
}

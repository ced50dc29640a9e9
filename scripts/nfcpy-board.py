"""Runs nfcpy's PN532 driver on a serial board and prints what it found, one `key: value` a line.

    .venv-nfcpy/bin/python scripts/nfcpy-board.py read /dev/pts/N [--seconds S]

`read` opens the board as nfcpy opens `tty:USB0:pn532` (its TTY transport at 115 200 baud and its
pn532 driver's `init`: wake-up, GetFirmwareVersion, SAMConfiguration, a baud-rate change where
stty(1) takes one, Diagnose, the RF settings), senses a Type A target at 106 kbit/s (the
ContactlessFrontend's `sense`, retried until S seconds pass), activates it with nfcpy's tag
activation and reads its NDEF message, then closes the device (SetSerialBaudRate 115 200 and
PowerDown). Output:

    device: <nfcpy's name for the board>
    target: <nfcpy's RemoteTarget>
    tag: <nfcpy's Tag>
    uid: <hex>
    ndef-length: <n>
    record: <type> <name> <payload as hex>
    uri: <uri>            (a URI record)
    text: <text>          (a text record)

and exits 0; 2 when no target came within S seconds, 3 when the tag has no NDEF message, 4 when
the board did not answer nfcpy's opening (`error: the board did not answer nfcpy's opening: …`).

Why not `ContactlessFrontend('tty:pts/N:pn532')`: nfcpy 1.0.4 reads the port in a `tty:` path as
letters, digits and '-' only and looks it up among the names directly in /dev, so a pseudo-terminal
(/dev/pts/N) cannot be named that way (nfc/clf/transport.py, `TTY.find`). This script opens the
same transport and driver that nfcpy's device search opens for a path it matched.
"""
import argparse
import sys
import time

import ndef
import nfc
import nfc.clf
import nfc.clf.pn532
import nfc.clf.transport
import nfc.tag


def open_board(path):
    clf = nfc.ContactlessFrontend()
    transport = nfc.clf.transport.TTY(path)
    try:
        device = nfc.clf.pn532.init(transport)
    except IOError:
        transport.close()
        raise
    device._path = path
    clf.device = device
    return clf


def hexstring(data):
    return bytes(data).hex().upper()


def read(path, seconds):
    try:
        clf = open_board(path)
    except IOError as error:
        print("error: the board did not answer nfcpy's opening:", error, flush=True)
        return 4
    try:
        print("device:", clf.device, flush=True)
        deadline = time.monotonic() + seconds
        target = None
        while target is None and time.monotonic() < deadline:
            target = clf.sense(nfc.clf.RemoteTarget("106A"), iterations=1, interval=0.1)
        if target is None:
            print("error: no Type A target within %g s" % seconds, flush=True)
            return 2
        print("target:", target, flush=True)
        tag = nfc.tag.activate(clf, target)
        print("tag:", tag, flush=True)
        if tag is None:
            return 2
        print("uid:", hexstring(tag.identifier), flush=True)
        if tag.ndef is None:
            print("error: no NDEF message", flush=True)
            return 3
        print("ndef-length:", tag.ndef.length, flush=True)
        for record in tag.ndef.records:
            print("record:", record.type, repr(record.name), hexstring(record.data), flush=True)
            if isinstance(record, ndef.UriRecord):
                print("uri:", record.iri, flush=True)
            elif isinstance(record, ndef.TextRecord):
                print("text:", record.text, flush=True)
        return 0
    finally:
        clf.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["read"])
    parser.add_argument("device", help="the board's device node, e.g. /dev/pts/3")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to look for a target")
    arguments = parser.parse_args()
    return read(arguments.device, arguments.seconds)


if __name__ == "__main__":
    sys.exit(main())

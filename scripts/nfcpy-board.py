"""Runs nfcpy's PN532 driver on a serial board and prints what it found, one `key: value` a line.

    .venv-nfcpy/bin/python scripts/nfcpy-board.py read /dev/pts/N [--seconds S]
    .venv-nfcpy/bin/python scripts/nfcpy-board.py emulate /dev/pts/N --ndef HEX [--uid HEX3] [--seconds S]

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

`emulate` listens as a Type 4A target with nfcpy's `listen` (SENS_RES 44 00 sent as 00 44 in
TgInitAsTarget, NFCID1 08 + the 3 bytes of --uid, SEL_RES 20: ISO/IEC 14443-4), which answers the
reader's RATS with nfcpy's default ATS, then serves the NFC Forum Type 4 Tag 2.0 NDEF application
holding --ndef (the NDEF message, hex) itself: nfcpy's PN532 driver hands over ISO-DEP blocks, not
APDUs, so this script runs the card's side of the block protocol (I-blocks answered with the same
block number; S(DESELECT) answered and the end). It prints each C-APDU and R-APDU
(`capdu: <hex>`, `rapdu: <hex>`), `deselected` at the end, and exits 0 once the reader deselected
or released it; 2 when no reader came within S seconds.

The device is a path (/dev/pts/N) or nfcpy's own device path (`tty:NAME:pn532`). nfcpy 1.0.4 reads
the port in a `tty:` path as letters, digits and '-' only and looks it up among the names directly
in /dev (nfc/clf/transport.py, `TTY.find`), so a pseudo-terminal (/dev/pts/N) cannot be named that
way itself: for a path the script opens the same transport and driver that nfcpy's device search
opens for a path it matched; for a `tty:` path (a /dev name linked to the pty, say) it calls
`ContactlessFrontend.open`, nfcpy's device search itself.
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
    if path.startswith("tty:"):
        # nfcpy's own device search, as `ContactlessFrontend('tty:USB0:pn532')` does it.
        if not clf.open(path):
            raise IOError("nfcpy found no PN532 at %s" % path)
        return clf
    transport = nfc.clf.transport.TTY(path)
    try:
        device = nfc.clf.pn532.init(transport)
    except IOError:
        transport.close()
        raise
    device._path = path
    clf.device = device
    return clf


def open_or_say_why(path):
    """The opened board, or None after saying why nfcpy could not open it."""
    try:
        return open_board(path)
    except IOError as error:
        print("error: the board did not answer nfcpy's opening:", error, flush=True)
        return None


def hexstring(data):
    return bytes(data).hex().upper()


def read(path, seconds):
    clf = open_or_say_why(path)
    if clf is None:
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


NDEF_AID = bytes.fromhex("D2760000850101")


class Type4Tag:
    """The NDEF Tag Application of NFC Forum Type 4 Tag 2.0: CC file E103, NDEF file E104."""

    def __init__(self, message):
        self.files = {
            b"\xE1\x03": bytes.fromhex("000F 2000FF 00FF 0406 E104 0800 00 00".replace(" ", "")),
            b"\xE1\x04": len(message).to_bytes(2, "big") + message,
        }
        self.selected_application = False
        self.selected = None

    def answer(self, apdu):
        if len(apdu) < 4:
            return b"\x67\x00"
        cla, ins, p1, p2 = apdu[0:4]
        if ins == 0xA4 and p1 == 0x04:  # SELECT by name
            if apdu[5:5 + apdu[4]] == NDEF_AID:
                self.selected_application = True
                self.selected = None
                return b"\x90\x00"
            return b"\x6A\x82"
        if ins == 0xA4 and p1 == 0x00 and self.selected_application:  # SELECT by file identifier
            file_id = bytes(apdu[5:5 + apdu[4]])
            if file_id in self.files:
                self.selected = file_id
                return b"\x90\x00"
            return b"\x6A\x82"
        if ins == 0xB0 and self.selected is not None:  # READ BINARY
            offset = (p1 << 8) | p2
            le = apdu[4] if len(apdu) > 4 else 0
            data = self.files[self.selected]
            if offset > len(data):
                return b"\x6B\x00"
            return data[offset:offset + (le or 256)] + b"\x90\x00"
        return b"\x6D\x00"


def emulate(path, message, uid, seconds):
    clf = open_or_say_why(path)
    if clf is None:
        return 4
    try:
        print("device:", clf.device, flush=True)
        target = nfc.clf.LocalTarget("106A")
        target.sens_res = bytearray.fromhex("4400")
        target.sdd_res = bytearray(b"\x08" + uid)
        target.sel_res = bytearray.fromhex("20")
        activated = clf.listen(target, seconds)
        if activated is None or activated.tt4_cmd is None:
            print("error: no reader activated the target within %g s" % seconds, flush=True)
            return 2
        print("activated:", activated, flush=True)
        tag = Type4Tag(message)
        block = activated.tt4_cmd
        while True:
            pcb = block[0]
            if pcb & 0xF7 == 0xC2:  # S(DESELECT)
                clf.exchange(bytes(block), 0)
                print("deselected", flush=True)
                return 0
            if pcb & 0xE2 != 0x02 or pcb & 0x1C:  # not a plain I-block (chaining, CID, NAD)
                print("error: block not handled: %s" % hexstring(block), flush=True)
                return 4
            apdu = bytes(block[1:])
            print("capdu:", hexstring(apdu), flush=True)
            rapdu = tag.answer(apdu)
            print("rapdu:", hexstring(rapdu), flush=True)
            try:
                block = clf.exchange(bytes([0x02 | (pcb & 0x01)]) + rapdu, 1.0)
            except nfc.clf.BrokenLinkError:
                print("released", flush=True)
                return 0
            if block is None:
                print("released", flush=True)
                return 0
    finally:
        clf.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["read", "emulate"])
    parser.add_argument("device", help="the board's device node, e.g. /dev/pts/3")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to wait for a target or a reader")
    parser.add_argument("--ndef", default="", help="emulate: the NDEF message, hex")
    parser.add_argument("--uid", default="A1B2C3", help="emulate: the 3 bytes after 08 in NFCID1, hex")
    arguments = parser.parse_args()
    if arguments.mode == "emulate":
        return emulate(arguments.device, bytes.fromhex(arguments.ndef), bytes.fromhex(arguments.uid), arguments.seconds)
    return read(arguments.device, arguments.seconds)


if __name__ == "__main__":
    sys.exit(main())

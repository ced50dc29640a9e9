#!/usr/bin/env python3
"""Writes the seed corpora under Fuzz/Corpus/<target>/ that come from Fixtures/ (scripts/fuzz.sh
runs it before fuzzing; the hand-made seeds from specifications are committed files named for
their source and are left alone). Files made here start with "fixture-".

From every transcript in Fixtures/: the command and answer bytes of `>` / `<` lines (APDUs),
`ctl` lines (pseudo-APDUs, PN532 frames inside Direct Transmit, ACR122U replies), `tgt` / `ini`
lines, header ATRs; whole transcripts for `transcript`, spy logs for `spy-import`, credential
files for `credential`."""
import hashlib, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "Corpus")
BYTES = re.compile(r"^(?:[0-9A-F]{2})(?: [0-9A-F]{2})*$")

def put(target, data):
    if not data:
        return
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    name = "fixture-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)

def hexbytes(text):
    text = re.sub(r"\s*;.*$", "", text).strip()
    return bytes.fromhex(text) if BYTES.match(text) else None

def files(folder, suffix):
    for top, _, names in os.walk(os.path.join(ROOT, "Fixtures", folder)):
        for name in sorted(names):
            if name.endswith(suffix):
                yield os.path.join(top, name)

def main():
    for path in files("", ".trn"):
        raw = open(path, "rb").read()
        put("transcript", raw)
        for line in raw.decode("utf-8", "replace").splitlines():
            if line.startswith("# atr: "):
                atr = hexbytes(line[7:])
                if atr:
                    put("atr", atr)
                    put("historical-bytes", atr[4:-1])
                continue
            m = re.match(r"^(?:\+\S+ )?(?:@\S+ )?(>|<|ctl 0x[0-9A-F]{8} >|ctl 0x[0-9A-F]{8} <|tgt >|tgt <|ini >|ini <) ?(.*)$", line)
            if not m:
                continue
            kind, data = m.group(1), hexbytes(m.group(2))
            if not data:
                continue
            sent = kind.endswith(">")
            if sent:
                put("command-apdu", data)
                put("apdu-script", (" ".join("%02X" % b for b in data) + "\n").encode())
                put("simulator", bytes([0, 0, len(data) & 0xFF]) + data if len(data) < 256 else b"")
                if data[:4] == b"\xff\x00\x00\x00" and len(data) > 5:
                    put("pn532-frame", data[5:])
                if data[:1] == b"\xff":
                    put("pn532-frame", data)
            else:
                put("response-apdu", data)
                put("acr122-reply", data)
                if data[:1] == b"\xd5":
                    put("pn532-frame", data[:-2] if data[-2:] == b"\x90\x00" else data)
                if len(data) > 2:
                    put("ber-tlv", data[:-2])
                    put("fci", data[:-2])
                    put("ndef", data[:-2])
    for path in files("spy", ".log"):
        put("spy-import", open(path, "rb").read())
    for path in files("credentials", ".json"):
        put("credential", open(path, "rb").read())
    return 0

if __name__ == "__main__":
    sys.exit(main())

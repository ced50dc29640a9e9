// CardChannel and TransmissionProtocol, which the ISO/IEC 7816-4 transport drives, live in the PC/SC
// vocabulary module; they are re-exported so that code written against `import ISO7816` keeps its
// names.
@_exported import PCSCCore

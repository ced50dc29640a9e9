// The pcsc-lite client's API is made of the vocabulary types (PCSCError, ShareMode, ProtocolSet,
// CardChannel, ReaderState, …): a client that imports PCSC can name them without a second import,
// as NIOPosix does for NIOCore.
@_exported import PCSCCore

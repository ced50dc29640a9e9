// Forwards to pcsc-lite's <ifdhandler.h> (libpcsclite-dev). This directory stands in for the
// -I/usr/include/PCSC that pkg-config would give, whose flags also carry -pthread, which SwiftPM
// warns about on every build: SwiftPM puts it on the include path of every target that depends on
// CPCSCLite, so shim.h and the pcsc-lite headers themselves find <ifdhandler.h> here.
#include "/usr/include/PCSC/ifdhandler.h"

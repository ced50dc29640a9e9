// The C shim over pcsc-lite: includes only, plus accessors for what Swift cannot import.
//
// Swift imports object-like macros with literal values (SCARD_E_*, SCARD_PROTOCOL_*, ...), but not
// function-like macros or macros whose value is an expression of other macros. The accessors below
// exist only so that tests can compare the constants re-declared in Swift (PCSC/Constants.swift)
// with the headers' own definitions. No logic lives here.
#ifndef CPCSCLITE_SHIM_H
#define CPCSCLITE_SHIM_H

#include <winscard.h>
#include <reader.h>
#include <ifdhandler.h>

// SCARD_CTL_CODE(code) is a function-like macro: not importable.
static inline DWORD cpcsc_ctl_code(DWORD code) { return SCARD_CTL_CODE(code); }
// CM_IOCTL_GET_FEATURE_REQUEST expands through SCARD_CTL_CODE: not importable.
static inline DWORD cpcsc_cm_ioctl_get_feature_request(void) { return CM_IOCTL_GET_FEATURE_REQUEST; }
// SCARD_ATTR_* expand through SCARD_ATTR_VALUE(Class, Tag): not importable.
static inline DWORD cpcsc_attr_vendor_name(void) { return SCARD_ATTR_VENDOR_NAME; }
static inline DWORD cpcsc_attr_atr_string(void) { return SCARD_ATTR_ATR_STRING; }
static inline DWORD cpcsc_attr_maxinput(void) { return SCARD_ATTR_MAXINPUT; }
static inline DWORD cpcsc_attr_vendor_ifd_version(void) { return SCARD_ATTR_VENDOR_IFD_VERSION; }
static inline DWORD cpcsc_attr_device_friendly_name(void) { return SCARD_ATTR_DEVICE_FRIENDLY_NAME; }
// SCARD_AUTOALLOCATE is a cast expression: not importable.
static inline DWORD cpcsc_autoallocate(void) { return SCARD_AUTOALLOCATE; }
// MAX_BUFFER_SIZE_EXTENDED is an arithmetic expression: not importable.
static inline DWORD cpcsc_max_buffer_size_extended(void) { return MAX_BUFFER_SIZE_EXTENDED; }

#endif

#ifndef SRZLIB_SHIM_H
#define SRZLIB_SHIM_H

#include <zlib.h>

// deflateInit2 / inflateInit2 are macros that pass the library version and struct size; Swift
// cannot import function-like macros.
static inline int srzlib_deflate_init2(z_streamp stream, int level, int method, int windowBits,
                                       int memLevel, int strategy) {
    return deflateInit2(stream, level, method, windowBits, memLevel, strategy);
}

static inline int srzlib_inflate_init2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

#endif

/*
 * codec-dl.h - decompressors the preload borrows at run time (dlopen):
 * zstd and LZ4 blocks, for the PTX that CUDA's fatbinary compresses.
 */
#ifndef KMUX_CODEC_DL_H
#define KMUX_CODEC_DL_H

#include <stddef.h>

/*
 * Decompress n bytes at src into dst (cap bytes).  Return the number of
 * bytes written, -ENOSYS when the library cannot be loaded (the caller
 * skips the entry, as before), -EINVAL when the data does not decode or
 * does not fit.
 */
long codec_zstd_decompress(void *dst, size_t cap, const void *src, size_t n);
long codec_lz4_decompress(void *dst, size_t cap, const void *src, size_t n);

/* Tests: 0 makes both report -ENOSYS, as on a system without the libraries. */
void codec_set_enabled(int on);

#endif

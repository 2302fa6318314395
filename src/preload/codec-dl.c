/*
 * codec-dl.c - zstd and LZ4 decoding through dlopen.
 *
 * CUDA 13's fatbinary compresses the PTX it embeds (zstd by default, an
 * LZ4 block with --compress-mode=speed).  The preload links only libc,
 * libdl and libpthread, and a decoder of our own would be thousands of
 * lines of untrusted-input parsing; libzstd.so.1 and liblz4.so.1 are on
 * nearly every Linux system (systemd needs both), so they are loaded the
 * first time a compressed image is seen, like NVML elsewhere.  Without
 * them the entry is skipped: the kernels stay read-write, never wrong.
 */
#include "codec-dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>

typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned (*zstd_is_error_fn)(size_t);
typedef int (*lz4_decompress_fn)(const char *, char *, int, int);

static pthread_once_t codec_once = PTHREAD_ONCE_INIT;
static zstd_decompress_fn codec_zstd;
static zstd_is_error_fn codec_zstd_is_error;
static lz4_decompress_fn codec_lz4;
static int codec_enabled = 1;

static void codec_load(void)
{
	void *h;

	h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h) {
		codec_zstd = (zstd_decompress_fn)dlsym(h, "ZSTD_decompress");
		codec_zstd_is_error = (zstd_is_error_fn)dlsym(h, "ZSTD_isError");
		if (!codec_zstd || !codec_zstd_is_error)
			codec_zstd = NULL;
	}
	h = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h)
		codec_lz4 = (lz4_decompress_fn)dlsym(h, "LZ4_decompress_safe");
}

void codec_set_enabled(int on)
{
	codec_enabled = on;
}

long codec_zstd_decompress(void *dst, size_t cap, const void *src, size_t n)
{
	size_t r;

	if (!codec_enabled)
		return -ENOSYS;
	pthread_once(&codec_once, codec_load);
	if (!codec_zstd)
		return -ENOSYS;
	if (cap > LONG_MAX)
		return -EINVAL;
	r = codec_zstd(dst, cap, src, n);
	if (codec_zstd_is_error(r))
		return -EINVAL;
	return (long)r;
}

long codec_lz4_decompress(void *dst, size_t cap, const void *src, size_t n)
{
	int r;

	if (!codec_enabled)
		return -ENOSYS;
	pthread_once(&codec_once, codec_load);
	if (!codec_lz4)
		return -ENOSYS;
	if (cap > INT_MAX || n > INT_MAX)
		return -EINVAL;
	r = codec_lz4(src, dst, (int)n, (int)cap);
	return r < 0 ? -EINVAL : r;
}

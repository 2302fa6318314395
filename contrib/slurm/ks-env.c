/*
 * ks-env.c - the pure parts of kmux's SPANK plugin (see ks-env.h): task
 * environment values computed without Slurm, unit-tested without it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ks-env.h"

static bool ks_is_sanitizer(const char *e, size_t n)
{
	static const char *const rt[] = {
		"libasan", "libtsan", "liblsan", "libubsan", "libhwasan",
		"libclang_rt.",
	};
	const char *base = e;

	for (size_t i = 0; i < n; i++)
		if (e[i] == '/')
			base = e + i + 1;
	for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
		if (strncmp(base, rt[i], strlen(rt[i])) == 0)
			return true;
	return false;
}

/* The entry [e, e+n) names the same file as lib, or a libkmux.so. */
static bool ks_is_kmux(const char *e, size_t n, const char *lib)
{
	const char *base = e;

	if (n == strlen(lib) && strncmp(e, lib, n) == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		if (e[i] == '/')
			base = e + i + 1;
	return (size_t)(e + n - base) == strlen("libkmux.so") &&
	       strncmp(base, "libkmux.so", strlen("libkmux.so")) == 0;
}

/*
 * LD_PRELOAD with lib in it: unchanged when a libkmux.so is already there
 * (srun inside sbatch inherits the batch step's), else lib after the
 * sanitizer runtimes (which must stay first) and before everything else.
 * 0, 1 when unchanged, -ENAMETOOLONG.
 */
int ks_preload_value(const char *old, const char *lib, char *out, size_t len)
{
	const char *p, *sep = ": ";
	size_t o = 0, n;
	int pass;

	for (p = old; *p; p += n) {
		p += strspn(p, sep);
		n = strcspn(p, sep);
		if (n && ks_is_kmux(p, n, lib))
			return 1;
	}
	/* Pass 0: sanitizer runtimes; then lib; pass 1: the others. */
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (o + strlen(lib) + 2 > len)
				return -ENAMETOOLONG;
			o += (size_t)sprintf(out + o, "%s%s", o ? ":" : "", lib);
		}
		for (p = old; *p; p += n) {
			p += strspn(p, sep);
			n = strcspn(p, sep);
			if (!n || ks_is_sanitizer(p, n) != (pass == 0))
				continue;
			if (o + n + 2 > len)
				return -ENAMETOOLONG;
			if (o)
				out[o++] = ':';
			memcpy(out + o, p, n);
			o += n;
		}
	}
	if (o >= len)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

int ks_expand_path(const char *pattern, const char *node, char *out,
		   size_t len)
{
	size_t o = 0;

	for (const char *s = pattern; *s; s++) {
		char one[2] = { *s, '\0' };
		const char *add = one;

		if (s[0] == '%' && s[1] == 'n') {
			add = node;
			s++;
		} else if (s[0] == '%' && s[1] == '%') {
			add = "%";
			s++;
		}
		if (o + strlen(add) >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, add, strlen(add));
		o += strlen(add);
	}
	if (o >= len)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

void ks_task_name(uint32_t job, uint32_t step, uint32_t task, char *buf,
		  size_t len)
{
	char s[16];

	if (step == KS_STEP_BATCH)
		snprintf(s, sizeof(s), "batch");
	else if (step == KS_STEP_INTERACTIVE)
		snprintf(s, sizeof(s), "interactive");
	else
		snprintf(s, sizeof(s), "%" PRIu32, step);
	snprintf(buf, len, "slurm-%" PRIu32 ".%s.%" PRIu32, job, s, task);
}

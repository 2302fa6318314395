/*
 * bench/ptx/ptx-cost.c - what kmux's PTX analysis costs on the host, on
 * the PTX that real CUDA libraries embed (bench/ptx-cost.sh builds it
 * twice, against two versions of src/preload, and compares).
 *
 *   ptx-cost time FILE...        CPU time of the module scan (find,
 *                                decompress, parse: what a module load
 *                                pays under --streams) and of the range
 *                                solves (what a kernel's first launch in
 *                                a new geometry pays), per FILE and in all
 *   ptx-cost dump OUT FILE...    every entry's verdicts, and its ranges in
 *                                three geometries, to OUT: two builds that
 *                                write the same OUT decide the same
 *
 * A FILE is any binary holding fatbins (a shared library, a cubin
 * bundle): they are found by their magic at 8-byte alignment, as the
 * .nv_fatbin section lays them out.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ptx-range.h"
#include "ptx-readonly.h"

/* ptx-readonly.c's own, copied: the harness builds against any commit's
 * sources (bench/ptx-cost.sh's BASE), older headers included. */
#define FATBIN_MAGIC 0xba55ed50u

static const struct ptxr_geom geoms[] = {
	{ { 1, 1, 1 }, { 1, 1, 1 } },
	{ { 64, 1, 1 }, { 256, 1, 1 } },
	{ { 7, 3, 2 }, { 32, 8, 1 } },
};
#define NGEOMS (sizeof(geoms) / sizeof(geoms[0]))

struct cost {
	double scan_s, solve_s;
	unsigned long images, entries, solves;
};

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void dump_entry(FILE *o, const struct ptxro_entry *e)
{
	fprintf(o, " entry %s np=%d ro=%" PRIx64 " ext=%" PRIx64
		" globals=%d consts=%d sizes=", e->name, e->nparams,
		e->readonly, e->has_extent, e->globals, e->consts);
	for (int k = 0; k < e->nparams; k++)
		fprintf(o, "%u,", e->size[k]);
	for (int k = 0; e->ext && k < e->nparams && k < 64; k++)
		if (e->has_extent >> k & 1)
			fprintf(o, " [%" PRId64 ",%" PRId64 ")", e->ext[k].lo,
				e->ext[k].hi);
	if (e->range) {
		fprintf(o, " cand=%" PRIx64, ptxr_candidates(e->range));
		for (size_t g = 0; g < NGEOMS; g++) {
			int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
			uint64_t has = 0;
			int r = ptxr_solve(e->range, &geoms[g], &has, lo, hi);

			fprintf(o, " g%zu:%d:%" PRIx64, g, r, has);
			for (int k = 0; k < PTXR_MAX_PARAMS; k++)
				if (has >> k & 1)
					fprintf(o, "(%" PRId64 ",%" PRId64 ")",
						lo[k], hi[k]);
		}
	}
	fputc('\n', o);
}

/* Every fatbin of path, scanned (and solved, or dumped to o). */
static int cost_file(const char *path, FILE *o, struct cost *c)
{
	struct ptxro_image_stats st = { 0 };
	const unsigned char *p;
	struct stat sb;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &sb) < 0) {
		fprintf(stderr, "ptx-cost: cannot open %s: %m\n", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fprintf(stderr, "ptx-cost: cannot map %s: %m\n", path);
		return -1;
	}
	for (size_t off = 0; off + 16 < (size_t)sb.st_size; off += 8) {
		struct ptxro_module m;
		uint32_t magic;
		size_t sz;
		double t;
		int r;

		memcpy(&magic, p + off, sizeof(magic));
		if (magic != FATBIN_MAGIC)
			continue;
		sz = ptxro_image_size(p + off, (size_t)sb.st_size - off);
		if (!sz)
			continue;
		ptxro_module_init(&m);
		t = cpu_now();
		r = ptxro_scan_image(p + off, sz, 0, &m, &st);
		c->scan_s += cpu_now() - t;
		c->images++;
		c->entries += (unsigned long)m.n;
		if (o)
			fprintf(o, "image +%zx r=%d entries=%d vars=%d\n", off, r,
				m.n, m.nvar);
		for (int i = 0; o && i < m.nvar; i++)
			fprintf(o, " var %s const=%d\n", m.var[i].name,
				m.var[i].is_const);
		for (int i = 0; i < m.n; i++) {
			if (o) {
				dump_entry(o, &m.e[i]);
				continue;
			}
			for (size_t g = 0; m.e[i].range && g < NGEOMS; g++) {
				int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
				uint64_t has;

				t = cpu_now();
				ptxr_solve(m.e[i].range, &geoms[g], &has, lo,
					   hi);
				c->solve_s += cpu_now() - t;
				c->solves++;
			}
		}
		ptxro_module_release(&m);
		/* The next fatbin starts past this one. */
		off += (sz & ~(size_t)7) - 8;
	}
	if (o)
		fprintf(o, "file %s ptx=%u decompressed=%u bad=%u calls=%u\n",
			path, st.ptx, st.decompressed, st.bad, st.calls);
	munmap((void *)p, (size_t)sb.st_size);
	return 0;
}

static void cost_print(const char *what, const struct cost *c)
{
	printf("%s: images %lu entries %lu scan_cpu_s %.4f solves %lu "
	       "solve_cpu_s %.4f solve_ms_each %.4f\n", what, c->images,
	       c->entries, c->scan_s, c->solves, c->solve_s,
	       c->solves ? c->solve_s * 1e3 / (double)c->solves : 0.0);
}

int main(int argc, char **argv)
{
	struct cost all = { 0 };
	FILE *o = NULL;
	int first = 2;

	if (argc >= 3 && strcmp(argv[1], "dump") == 0) {
		if (argc < 4)
			goto usage;
		o = fopen(argv[2], "w");
		if (!o) {
			fprintf(stderr, "ptx-cost: cannot create %s: %m\n",
				argv[2]);
			return 1;
		}
		first = 3;
	} else if (argc < 3 || strcmp(argv[1], "time") != 0) {
		goto usage;
	}
	for (int a = first; a < argc; a++) {
		struct cost c = { 0 };

		if (cost_file(argv[a], o, &c) < 0)
			return 1;
		if (!o)
			cost_print(argv[a], &c);
		all.scan_s += c.scan_s;
		all.solve_s += c.solve_s;
		all.images += c.images;
		all.entries += c.entries;
		all.solves += c.solves;
	}
	if (o && fclose(o) != 0) {
		fprintf(stderr, "ptx-cost: cannot write %s: %m\n", argv[2]);
		return 1;
	}
	if (!o)
		cost_print("all", &all);
	return 0;
usage:
	fprintf(stderr, "usage: ptx-cost time FILE...\n"
			"       ptx-cost dump OUT FILE...\n");
	return 2;
}

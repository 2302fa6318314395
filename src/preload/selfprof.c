/*
 * selfprof.c - where the preload's own host time goes: a profiling build
 * (`make prof`, build/prof/libkmux.so) for the machines that have no perf.
 *
 * The profiling build compiles every preload file but this one with
 * -finstrument-functions: the compiler calls __cyg_profile_func_enter/_exit
 * around each function, and these keep, per function, its calls, its
 * inclusive TSC cycles and how many probed calls ran beneath it.  A probe
 * pair costs cycles of its own; it is measured once at start-up, so that a
 * report can take the probes beneath a function out of its time.  With
 * KMUX_SELFPROF=FILE the table is written at exit to FILE.<pid>, by each
 * process that launched a kernel (any, with KMUX_SELFPROF_ALL set): one
 * line per function, its offset in libkmux.so (scripts/selfprof-report.py
 * names it with nm).
 *
 * In the ordinary build this file is empty.
 */
#ifdef KMUX_SELFPROF

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "register.h"	/* kmux_launches */

#define SP_SLOTS 8192		/* power of two; the preload has ~2000 */
#define SP_DEPTH 128

#define SP_NOPROBE __attribute__((no_instrument_function))

struct sp_slot {
	_Atomic uintptr_t fn;
	_Atomic uint64_t calls, cycles, inner;
};

struct sp_frame {
	uintptr_t fn;
	uint64_t t0;
	uint64_t probes;	/* the thread's probe count at entry */
};

static struct sp_slot sp_tab[SP_SLOTS];
static _Atomic uint64_t sp_lost;	/* table full, or too deep */
static __thread struct sp_frame sp_stack[SP_DEPTH]
	__attribute__((tls_model("initial-exec")));
static __thread int sp_depth __attribute__((tls_model("initial-exec")));
static __thread uint64_t sp_probes __attribute__((tls_model("initial-exec")));
static uint64_t sp_tsc0, sp_ns0;
static double sp_pair_cycles;

void __cyg_profile_func_enter(void *fn, void *site) SP_NOPROBE;
void __cyg_profile_func_exit(void *fn, void *site) SP_NOPROBE;

static SP_NOPROBE uint64_t sp_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static SP_NOPROBE struct sp_slot *sp_slot_of(uintptr_t fn)
{
	size_t h = (fn >> 4) * 0x9e3779b97f4a7c15ull >> 51;	/* 13 bits */

	for (size_t i = 0; i < SP_SLOTS; i++) {
		struct sp_slot *s = &sp_tab[(h + i) & (SP_SLOTS - 1)];
		uintptr_t cur = atomic_load_explicit(&s->fn,
						     memory_order_acquire);

		if (cur == fn)
			return s;
		if (cur == 0) {
			uintptr_t zero = 0;

			if (atomic_compare_exchange_strong(&s->fn, &zero, fn) ||
			    zero == fn)
				return s;
		}
	}
	return NULL;
}

void __cyg_profile_func_enter(void *fn, void *site)
{
	int d = sp_depth++;

	(void)site;
	sp_probes++;
	if (d < SP_DEPTH)
		sp_stack[d] = (struct sp_frame){ (uintptr_t)fn, __rdtsc(),
						 sp_probes };
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	uint64_t t = __rdtsc();
	int d = --sp_depth;
	struct sp_slot *s;
	struct sp_frame *f;

	(void)site;
	if (d < 0) {
		sp_depth = 0;	/* entered before the probes were live */
		return;
	}
	if (d >= SP_DEPTH)
		return;
	f = &sp_stack[d];
	if (f->fn != (uintptr_t)fn || !(s = sp_slot_of(f->fn))) {
		atomic_fetch_add_explicit(&sp_lost, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->cycles, t - f->t0, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->inner, sp_probes - f->probes,
				  memory_order_relaxed);
}

static SP_NOPROBE void sp_marker(void)
{
}

/*
 * What one probe pair adds to the function around it: pairs for an empty
 * function, timed from outside (the best of 5 runs; the loop's own few
 * cycles are left in).
 */
static SP_NOPROBE double sp_calibrate(void)
{
	enum { N = 200000 };
	uint64_t t0, t1, best = UINT64_MAX;
	struct sp_slot *s;

	for (int trial = 0; trial < 5; trial++) {
		t0 = __rdtsc();
		for (int i = 0; i < N; i++) {
			__cyg_profile_func_enter((void *)sp_marker, NULL);
			__cyg_profile_func_exit((void *)sp_marker, NULL);
		}
		t1 = __rdtsc();
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	s = sp_slot_of((uintptr_t)sp_marker);
	if (s) {
		atomic_store(&s->calls, 0);
		atomic_store(&s->cycles, 0);
		atomic_store(&s->inner, 0);
	}
	return (double)best / N;
}

__attribute__((constructor(101))) static SP_NOPROBE void sp_start(void)
{
	sp_pair_cycles = sp_calibrate();
	sp_ns0 = sp_ns();
	sp_tsc0 = __rdtsc();
}

__attribute__((destructor)) static SP_NOPROBE void sp_write(void)
{
	const char *path = getenv("KMUX_SELFPROF");
	uint64_t ns = sp_ns() - sp_ns0, tsc = __rdtsc() - sp_tsc0;
	char name[4096];
	Dl_info di;
	FILE *f;

	if (!path || !*path)
		return;
	/*
	 * The program's helpers (a shell, ldconfig) inherit the variable:
	 * only processes that launched kernels are worth a table.
	 */
	if (!atomic_load(&kmux_launches) && !getenv("KMUX_SELFPROF_ALL"))
		return;
	/* One file per process: a program's children write theirs too. */
	snprintf(name, sizeof(name), "%s.%d", path, (int)getpid());
	if (!(f = fopen(name, "w"))) {
		fprintf(stderr, "kmux: cannot write %s: %s\n", name,
			strerror(errno));
		return;
	}
	if (!dladdr((void *)sp_marker, &di))
		di.dli_fbase = NULL;
	fprintf(f, "# kmux selfprof pid %d cycles_per_ns %.6f "
		"probe_pair_cycles %.2f lost %llu\n", (int)getpid(),
		ns ? (double)tsc / (double)ns : 0.0, sp_pair_cycles,
		(unsigned long long)atomic_load(&sp_lost));
	fprintf(f, "# offset calls cycles inner_probes\n");
	for (size_t i = 0; i < SP_SLOTS; i++) {
		uintptr_t fn = atomic_load(&sp_tab[i].fn);
		uint64_t calls = atomic_load(&sp_tab[i].calls);

		if (!fn || !calls)
			continue;
		fprintf(f, "%#lx %llu %llu %llu\n",
			(unsigned long)(fn - (uintptr_t)di.dli_fbase),
			(unsigned long long)calls,
			(unsigned long long)atomic_load(&sp_tab[i].cycles),
			(unsigned long long)atomic_load(&sp_tab[i].inner));
	}
	fclose(f);
}

#else
/* ISO C wants a translation unit to declare something. */
typedef int selfprof_unused;
#endif

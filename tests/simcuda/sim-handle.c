/*
 * sim-handle.c - the registry of live handles (contexts, streams, events,
 * modules, functions, libraries, kernels, graphs, graph execs).
 *
 * An open-addressing hash set keyed by the pointer, with the handle's type.
 * A handle the program passes in is looked up here before it is used, so a
 * destroyed or made-up handle gets CUDA_ERROR_INVALID_HANDLE (or _CONTEXT)
 * rather than a use-after-free inside the simulator.  Callers hold sim.lock.
 */
#include <stdlib.h>

#include "sim.h"

struct slot {
	const void *p;		/* NULL: empty; &tomb: deleted */
	enum sim_htype type;
};

static struct slot *slots;
static size_t nslots, nused, ntomb;
static const char tomb;

static size_t hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static struct slot *find(const void *p)
{
	size_t i;

	if (nslots == 0)
		return NULL;
	for (i = hash(p) & (nslots - 1);; i = (i + 1) & (nslots - 1)) {
		if (slots[i].p == NULL)
			return NULL;
		if (slots[i].p == p)
			return &slots[i];
	}
}

static int grow(void)
{
	size_t n = nslots ? nslots * 2 : 256, i, j;
	struct slot *ns;

	/* Only rehash to the same size when tombstones are the problem. */
	if (nslots != 0 && nused < nslots / 4)
		n = nslots;
	ns = calloc(n, sizeof(*ns));
	if (ns == NULL)
		return -1;
	for (i = 0; i < nslots; i++) {
		if (slots[i].p == NULL || slots[i].p == &tomb)
			continue;
		for (j = hash(slots[i].p) & (n - 1); ns[j].p != NULL;
		     j = (j + 1) & (n - 1))
			;
		ns[j] = slots[i];
	}
	free(slots);
	slots = ns;
	nslots = n;
	ntomb = 0;
	return 0;
}

int sim_handle_add(const void *p, enum sim_htype type)
{
	size_t i;

	if ((nused + ntomb + 1) * 2 > nslots && grow() < 0)
		return -1;
	for (i = hash(p) & (nslots - 1);
	     slots[i].p != NULL && slots[i].p != &tomb;
	     i = (i + 1) & (nslots - 1))
		;
	if (slots[i].p == &tomb)
		ntomb--;
	slots[i].p = p;
	slots[i].type = type;
	nused++;
	return 0;
}

void sim_handle_del(const void *p)
{
	struct slot *s = find(p);

	if (s == NULL)
		return;
	s->p = &tomb;
	nused--;
	ntomb++;
}

int sim_handle_ok(const void *p, enum sim_htype type)
{
	struct slot *s;

	if (p == NULL)
		return 0;
	s = find(p);
	return s != NULL && s->type == type;
}

void sim_handle_fini(void)
{
	free(slots);
	slots = NULL;
	nslots = nused = ntomb = 0;
}

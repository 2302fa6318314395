/*
 * kdur.c - learned kernel durations (kdur.h): a direct-mapped table of
 * kinds, when to time a launch, the running estimate, the weight.
 */
#include <string.h>

#include "kdur.h"

void kdur_init(struct kdur *k, uint64_t unit_ns)
{
	memset(k, 0, sizeof(*k));
	k->unit_ns = unit_ns ? unit_ns : KDUR_UNIT_NS;
}

uint64_t kdur_key(const void *fn, const unsigned grid[3])
{
	uint64_t h = (uint64_t)(uintptr_t)fn;

	for (int i = 0; i < 3; i++) {
		h ^= grid[i];
		h *= 0x100000001b3ull;		/* FNV-1a's prime */
		h ^= h >> 29;
	}
	return h ? h : 1;
}

static struct kdur_ent *kdur_slot(const struct kdur *k, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (struct kdur_ent *)&k->ent[(h >> 32) % KDUR_SLOTS];
}

int kdur_launch(struct kdur *k, uint64_t key)
{
	struct kdur_ent *e;

	if (!key)
		return 0;
	e = kdur_slot(k, key);
	if (e->key != key) {
		/* Direct-mapped: the newcomer takes the slot. */
		if (e->key) {
			k->replaced++;
			if (e->samples)
				k->kinds--;
		}
		memset(e, 0, sizeof(*e));
		e->key = key;
	}
	e->launches++;
	/*
	 * Not the first launch: with lazy module loading it loads the
	 * kernel, and an idle stream's start record would time that too.
	 */
	if (e->launches == 1)
		return 0;
	if (e->launches <= 1 + KDUR_FIRST)
		return 1;
	return e->launches % KDUR_EVERY == 0;
}

void kdur_add(struct kdur *k, uint64_t key, uint64_t ns)
{
	struct kdur_ent *e;

	if (!key || !ns)
		return;
	e = kdur_slot(k, key);
	if (e->key != key)
		return;			/* replaced while it ran */
	if (!e->samples++) {
		e->ns = ns;
		k->kinds++;
	} else {
		/* A quarter of each new timing: follows, not jumps. */
		e->ns = (3 * e->ns + ns) / 4;
	}
	if (!e->ns)
		e->ns = 1;
	k->timed++;
}

uint32_t kdur_weight(const struct kdur *k, uint64_t key, uint32_t fallback)
{
	const struct kdur_ent *e;
	uint64_t w;

	if (!key)
		return fallback;
	e = kdur_slot(k, key);
	if (e->key != key || !e->samples)
		return fallback;
	w = (e->ns + k->unit_ns / 2) / k->unit_ns;
	if (w < 1)
		return 1;
	return w > KDUR_WEIGHT_MAX ? KDUR_WEIGHT_MAX : (uint32_t)w;
}

/*
 * sim-overlap.h - for e2e programs linked with the simulated driver: how
 * many pairs of one kernel's runs overlapped in time (simcuda's records).
 */
#ifndef KMUX_E2E_SIM_OVERLAP_H
#define KMUX_E2E_SIM_OVERLAP_H

#include <string.h>

#include "simcuda.h"

static inline int sim_overlapping_pairs(const char *name)
{
	struct simcuda_op_info a, b;
	size_t n = simcuda_op_count();
	int pairs = 0;

	for (size_t i = 0; i < n; i++) {
		if (simcuda_op_get(i, &a) || strcmp(a.name, name))
			continue;
		for (size_t j = i + 1; j < n; j++) {
			if (simcuda_op_get(j, &b) || strcmp(b.name, name))
				continue;
			pairs += a.start_ns < b.end_ns && b.start_ns < a.end_ns;
		}
	}
	return pairs;
}

#endif

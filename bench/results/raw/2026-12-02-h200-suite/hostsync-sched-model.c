/* host_sync's operations through the scheduler alone: records per step. */
#include <stdio.h>
#include <stdlib.h>
#include "sched.h"
static struct sched *s;
static void go(struct sched_access *a, int n)
{
	struct sched_decision d;
	if (sched_submit(s, a, n, 0, &d)) abort();
}
static void hw_read(uint64_t id)
{
	struct sched_hostwait hw;
	sched_sync_for_read(s, &id, 1, &hw);
	sched_complete_hostwait(s, &hw);
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, rois = argc > 2 ? atoi(argv[2]) : 20;
	struct sched_stats st0, st;
	sched_new(n, 0, &s);
	/* task t: init 10+t, a 20+t, b 30+t, f 40+t, part 50+t, res 60+t */
	for (int r = 0; r < rois; r++) {
		sched_get_stats(s, &st0);
		for (int t = 0; t < 4; t++) {
			struct sched_access c[2] = { {10 + t, SCHED_READ, 0, 0}, {20 + t, SCHED_WRITE, 0, 0} };
			go(c, 2);
		}
		for (int step = 0; step < 4; step++) {
			for (int t = 0; t < 4; t++) {
				struct sched_access j1[3] = { {20 + t, SCHED_READ, 0, 0}, {40 + t, SCHED_READ, 0, 0}, {30 + t, SCHED_RW, 0, 0} };
				struct sched_access j2[3] = { {30 + t, SCHED_READ, 0, 0}, {40 + t, SCHED_READ, 0, 0}, {20 + t, SCHED_RW, 0, 0} };
				struct sched_access rp[3] = { {20 + t, SCHED_READ, 0, 0}, {40 + t, SCHED_READ, 0, 0}, {50 + t, SCHED_RW, 0, 0} };
				struct sched_access rf[2] = { {50 + t, SCHED_READ, 0, 0}, {60 + t, SCHED_RW, 0, 0} };
				go(j1, 3); go(j2, 3); go(rp, 3); go(rf, 2);
			}
			hw_read(60);
			for (int t = 0; t < 4; t++) {
				struct sched_access j1[3] = { {20 + t, SCHED_READ, 0, 0}, {40 + t, SCHED_READ, 0, 0}, {30 + t, SCHED_RW, 0, 0} };
				struct sched_access j2[3] = { {30 + t, SCHED_READ, 0, 0}, {40 + t, SCHED_READ, 0, 0}, {20 + t, SCHED_RW, 0, 0} };
				go(j1, 3); go(j2, 3);
			}
			for (int t = 0; t < 4; t++)
				hw_read(60 + t);
			struct sched_hostwait hw;
			sched_sync_all(s, &hw);
			sched_complete_hostwait(s, &hw);
		}
		sched_get_stats(s, &st);
		if (r >= rois - 3)
			printf("roi %d: records after %llu, lazy %llu, waits %llu, hot dropped %llu\n", r,
			       (unsigned long long)(st.events_after - st0.events_after),
			       (unsigned long long)(st.events_lazy - st0.events_lazy),
			       (unsigned long long)(st.waits_issued - st0.waits_issued),
			       (unsigned long long)(st.hot_cleared - st0.hot_cleared));
	}
	return 0;
}

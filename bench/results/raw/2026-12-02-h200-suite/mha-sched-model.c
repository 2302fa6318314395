#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sched.h"
#define NH 16
static struct sched *s;
static unsigned w_qk=1, w_sm=1, w_av=1, w_mg=1;
static struct sched_decision go(struct sched_access *a, int n, unsigned w)
{
	struct sched_decision d;
	if (sched_submit_weighted(s, a, n, 0, w, &d)) abort();
	return d;
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, rois = argc > 2 ? atoi(argv[2]) : 6;
	unsigned fl = argc > 3 ? atoi(argv[3]) : 0;
	if (argc > 4) { w_qk = 21; w_sm = 10; w_av = 24; w_mg = 4; }
	uint64_t QS = 2048ull * 64 * 4, SS = 2048ull * 2048 * 4;
	sched_new(n, fl, &s);
	uint64_t mseq = 0; int mst = -1;
	for (int r = 0; r < rois; r++) {
		for (int p = 0; p < 2; p++) {
			char line[256]; int o = 0;
			o += sprintf(line + o, "roi %d pass %d heads:", r, p);
			int late = 0, exact = 0;
			for (int h = 0; h < NH; h++) {
				struct sched_access qk[3] = {
					{1, SCHED_READ, h * QS, QS}, {2, SCHED_READ, h * QS, QS},
					{4, SCHED_RW, h * SS, SS} };
				struct sched_access sm[1] = { {4, SCHED_RW, h * SS, SS} };
				struct sched_access av[3] = {
					{4, SCHED_READ, h * SS, SS}, {3, SCHED_READ, h * QS, QS},
					{5, SCHED_RW, h * QS, QS} };
				struct sched_decision a = go(qk, 3, w_qk), b = go(sm, 1, w_sm), c = go(av, 3, w_av);
				o += sprintf(line + o, " %d%s", a.stream,
					     (a.stream == b.stream && b.stream == c.stream) ? "" : "*");
				for (int i = 0; i < c.nwait; i++)
					if (c.wait[i].stream == mst) {
						if (c.wait[i].seq == mseq) exact++; else if (c.wait[i].seq > mseq) late++;
					}
			}
			struct sched_access mg[2] = { {5, SCHED_READ, 0, 0}, {6, SCHED_RW, 0, 0} };
			struct sched_decision m = go(mg, 2, w_mg);
			printf("%s | merge on %d waits %d rec_after %d | av waits on prev merge: exact %d late %d\n",
			       line, m.stream, m.nwait, m.record_after, exact, late);
			mst = m.stream; mseq = m.seq;
		}
		struct sched_hostwait hw;
		sched_sync_all(s, &hw);
		sched_complete_hostwait(s, &hw);
	}
	struct sched_stats st; sched_get_stats(s, &st);
	return 0;
}

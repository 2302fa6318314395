/*
 * pmu_probe.c - can this VM count retired instructions (perf_event_open)?
 * If it can, kmux's host cost per ROI could be counted exactly instead of
 * timed: run 25 found each process's own VM CPU noise larger than 2%.
 * Prints one line; exit 0 when counting works, 1 when it does not.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	struct perf_event_attr a;
	uint64_t n = 0;
	volatile uint64_t x = 0;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		printf("pmu: perf_event_open(instructions): %s\n", strerror(errno));
		return 1;
	}
	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (int i = 0; i < 1000000; i++)
		x += (uint64_t)i;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &n, sizeof(n)) != sizeof(n)) {
		printf("pmu: read: %s\n", strerror(errno));
		return 1;
	}
	printf("pmu: instructions counted: %llu for a 1e6-iteration loop\n", (unsigned long long)n);
	return 0;
}

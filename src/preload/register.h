/*
 * register.h - the preload's client of kmuxd: registration at the first
 * cuInit, the quota and GPUs the daemon admits the process with, and the
 * reports that keep the daemon's view of the process current.
 *
 * Every process that carries the preload and finds a daemon registers,
 * whether kmux started it (KMUX_JOB) or not (LD_PRELOAD set system-wide, a
 * Slurm task: the daemon makes it a job of its own and queues it like any
 * other).  The environment it reads, once, at that first cuInit:
 *
 *   KMUX_JOB             the job kmux started this process for
 *   KMUX_SOCKET          the daemon's socket (else the per-user one, then
 *                        the system one: paths.h)
 *   KMUX_MEM             memory per GPU this process declares (a size:
 *                        "12G", "1.5GiB"); else the daemon learns or guesses
 *   KMUX_NAME            the job's name (else argv[0]'s base name)
 *   CUDA_VISIBLE_DEVICES already set: the daemon may place the process on
 *                        those GPUs only (integer indices; UUIDs cannot be
 *                        mapped and the process runs unmanaged)
 *   KMUX_REGISTER=0      do not register (run unmanaged)
 *
 * Fail open: no daemon, an error from it or one that does not answer in
 * time, and the program runs unmanaged, as without kmux.  Once admitted, a
 * helper thread keeps the connection for the life of the process (its
 * closing tells the daemon the process ended), reports memory and kernel
 * launches every 250 ms when they changed, and reconnects and registers
 * again when the daemon restarts.  A child after fork() has no connection.
 */
#ifndef KMUX_REGISTER_H
#define KMUX_REGISTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kernel and graph launches so far (wrap-launch.c adds, relaxed). */
extern _Atomic uint64_t kmux_launches;

/*
 * Calls that make the host wait for the GPU so far: context, stream and
 * event synchronizations and synchronous copies that may read device memory
 * (wrap-sync.c, wrap-copy.c).  kmuxd turns them into waits per second: a
 * program that waits often loses its co-runners' turns at every wait when
 * it shares a GPU without MPS (docs/design-daemon.md, "Tasks that wait on
 * the GPU often do not share one").
 */
extern _Atomic uint64_t kmux_host_waits;

/* One relaxed add, no fence: on every path, tracking or not. */
static inline void host_wait_count(void)
{
	atomic_fetch_add_explicit(&kmux_host_waits, 1, memory_order_relaxed);
}

/*
 * From cuInit, before the real one: register once (every thread calling
 * cuInit waits for the first).  0: go on (admitted, or unmanaged); -ECANCELED:
 * the daemon cancelled this process while it was queued, cuInit fails.
 */
int register_at_init(void);

/*
 * For exclusive regions (region.c): the daemon's socket, the job and first
 * GPU this process was admitted with.  0, or -ENOTCONN when no daemon
 * admitted it.
 */
int register_admitted(char *sock, size_t len, uint64_t *job, uint32_t *gpu);
/* True while the helper thread is connected to kmuxd. */
bool register_daemon_up(void);

#endif

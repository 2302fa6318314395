/*
 * mps.h - kmuxd --mps: one private CUDA MPS control daemon for the jobs
 * kmuxd starts or admits, so that co-located jobs share each GPU through
 * one MPS server instead of time-slicing between their contexts.
 *
 * Owns finding nvidia-cuda-mps-control, its directories (<socket>.mps/pipe
 * and <socket>.mps/log, 0700: one per socket, as the socket's lock makes
 * kmuxd one per socket), starting it before any job is admitted, adopting
 * the one an earlier kmuxd on the same socket left running (kill -9), and
 * stopping it when kmuxd exits.  Memory limits stay the preload's: no
 * CUDA_MPS_* limit or thread percentage is set.
 *
 * No libevent here: every control command runs to completion (bounded)
 * outside the event loop, at start-up and at shutdown.
 */
#ifndef KMUX_MPS_H
#define KMUX_MPS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define MPS_CONTROL_NAME "nvidia-cuda-mps-control"
/* Where NVIDIA's container images put it when PATH does not say. */
#define MPS_CONTROL_FALLBACK_DIR "/usr/local/nvidia/bin"

/* Bounds, seconds: one control command; the daemon answering after -d;
 * the daemon gone after quit. */
#define MPS_CMD_TIMEOUT_S 10.0
#define MPS_UP_WAIT_S 10.0
#define MPS_QUIT_WAIT_S 10.0

struct mps {
	char control[PATH_MAX];	/* the binary */
	char dir[PATH_MAX];	/* <socket>.mps */
	char pipe[PATH_MAX];	/* CUDA_MPS_PIPE_DIRECTORY */
	char log[PATH_MAX];	/* CUDA_MPS_LOG_DIRECTORY */
	bool on;		/* running for us: jobs get its directories */
	bool adopted;		/* an earlier kmuxd's, still answering */
	bool leftover;		/* off, but an earlier kmuxd --mps's pipe
				 * directory is there */
};

/*
 * The control binary: given (--mps-control) when not NULL, which must be
 * an executable file; else MPS_CONTROL_NAME in the directories of
 * path_env (PATH; NULL or "": none), then in MPS_CONTROL_FALLBACK_DIR.
 * 0 with the path in buf, or -errno with a message for people in err.
 */
int mps_find_control(const char *given, const char *path_env, char *buf,
		     size_t len, char *err, size_t errlen);

/* m's directories for the daemon listening on socket; 0 or -ENAMETOOLONG. */
int mps_set_dirs(struct mps *m, const char *socket);

/*
 * Make m's directories (owned by uid, 0700) and bring its control daemon
 * up: adopt the one that answers get_server_list there, else start one
 * with -d and wait until it answers.  0 with m->on set, or -errno with the
 * reason in err (the binary's own complaint went to stderr).
 */
int mps_start(struct mps *m, unsigned uid, char *err, size_t errlen);

/*
 * quit, then wait (at most MPS_QUIT_WAIT_S) until it no longer answers.
 * Logs what happened; m->on is false afterwards.  Nothing when off.
 */
void mps_stop(struct mps *m);

#endif

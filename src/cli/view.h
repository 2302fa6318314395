/*
 * view.h - how `kmux ps` and `kmux top` show jobs and GPUs, to people (text
 * tables) and to programs (JSON).
 *
 * Owns every format the two commands print, as pure functions of the
 * daemon's records and a clock, so that the unit tests check the exact
 * output and the ncurses view of top draws the very lines `top --once`
 * prints.
 */
#ifndef KMUX_VIEW_H
#define KMUX_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "proto.h"

/* "queued", "running", "exited 3", "killed SIGKILL", "cancelled", "failed 127". */
void view_state(const struct proto_job_rec *r, char *buf, size_t len);
/* "0,2" for a mask, "-" for none. */
void view_gpus(uint64_t mask, char *buf, size_t len);
/* "850ms", "12.3s", "4m05s", "2h07m", "3d04h"; "-" for 0. */
void view_duration(uint64_t us, char *buf, size_t len);
/* How long the job has run, or ran: 0 if it never started. */
uint64_t view_runtime_us(const struct proto_job_rec *r, uint64_t now_us);
/* "TERM" for 15; "SIG37" when unnamed. */
const char *view_signal_name(int sig, char *buf, size_t len);
/* 15 for "TERM", "SIGTERM", "15"; -1 otherwise. */
int view_signal_parse(const char *s);

/* The job table of `kmux ps`: a header, then one line per job. */
void view_ps_table(FILE *f, const struct proto_job_list *jobs,
		   uint64_t now_us);
/* An array of job objects (kmux-ps(1) lists the keys). */
cJSON *view_ps_json(const struct proto_job_list *jobs, uint64_t now_us);

/* The task table of `kmux top`: state, GPUs, memory used / quota,
 * kernels per second, runtime. */
void view_top_tasks(FILE *f, const struct proto_job_list *jobs,
		    uint64_t now_us);
/* One frame of `kmux top`: the GPUs, then the tasks. */
void view_top_text(FILE *f, const struct proto_gpu_list *gpus,
		   const struct proto_job_list *jobs, uint64_t now_us);
/* {"gpus": [...], "jobs": [...]}. */
cJSON *view_top_json(const struct proto_gpu_list *gpus,
		     const struct proto_job_list *jobs, uint64_t now_us);

#endif

/*
 * job-rec.h - a job of the database as the wire's job record: what `kmux
 * ps` shows, whether kmuxd sends it (JOB_LIST) or, with no daemon running,
 * the CLI reads the database itself.
 */
#ifndef KMUX_JOB_REC_H
#define KMUX_JOB_REC_H

#include <stddef.h>

#include "db.h"
#include "proto.h"

/* Bytes of a job's command line shown. */
#define JOB_REC_CMD_SHOWN 200

/*
 * Fill *r from d, and cmd (JOB_REC_CMD_SHOWN + 1 bytes) with its command
 * line ("prog arg1 arg2", cut).  r->name and r->cmd point into d and cmd.
 * The live figures (memory used, kernels/s) are left 0.
 */
void job_rec_from_db(const struct db_job *d, struct proto_job_rec *r,
		     char *cmd, size_t cmdlen);

#endif

/*
 * job-rec.c - a database job as a wire job record (see job-rec.h).
 */
#include <stdio.h>
#include <string.h>

#include "job-rec.h"

/* "prog arg1 arg2", cut at len - 1 bytes, into buf. */
static void cmd_line(const struct db_job *dj, char *buf, size_t len)
{
	size_t off = 0, k = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < dj->argc && k < dj->argv_len; i++) {
		const char *s = dj->argv + k;

		if (off + 1 < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						i ? " " : "", s);
		k += strlen(s) + 1;
	}
	if (off >= len)
		off = len - 1;
	buf[off] = '\0';
}

void job_rec_from_db(const struct db_job *d, struct proto_job_rec *r,
		     char *cmd, size_t cmdlen)
{
	memset(r, 0, sizeof(*r));
	cmd_line(d, cmd, cmdlen);
	r->id = (uint64_t)d->id;
	r->gpus = d->gpus;
	r->mem_request = d->mem_request;
	r->mem_peak = d->mem_peak;
	r->submit_us = d->submit_us;
	r->start_us = d->start_us;
	r->end_us = d->end_us;
	r->uid = d->uid;
	r->pid = d->pid > 0 ? (uint32_t)d->pid : 0;
	r->state = d->state;
	r->exit_code = d->exit_code;
	r->signal = d->signal;
	r->ngpus = d->ngpus;
	r->mem_quota = d->mem_quota;
	r->name = d->name;
	r->cmd = cmd;
}
